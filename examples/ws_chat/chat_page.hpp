// chat_page.hpp — the page ws_chat_server serves at / on its WebSocket port: a browser is a chat client.
// The page opens a WebSocket to the address it came from (wss:// when it came over https), shows what
// the room says, sends what is typed, and when the connection ends shows the server's close code and
// reason ("closed 1012 draining": a restart). The browser answers the server's ping frames itself (no
// script runs for them), so a page left open is kept by the heartbeat even with reader idle off.
// window.chat holds the page's state for a test driving the browser: state, received, closed.
#ifndef HEARTWHEEL_EXAMPLES_WS_CHAT_PAGE_HPP
#define HEARTWHEEL_EXAMPLES_WS_CHAT_PAGE_HPP

inline constexpr const char* chat_page = R"html(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>heartwheel chat</title>
<link rel="icon" href="data:,">
<style>
  body { font: 15px/1.4 system-ui, sans-serif; margin: 0 auto; max-width: 40em; padding: 1em; color: #222; }
  h1 { font-size: 1.2em; margin: 0 0 .5em; }
  #status { padding: .3em .6em; border-radius: .3em; background: #eee; display: inline-block; }
  #status.open { background: #d8f0d8; }
  #status.closed { background: #f6d6d6; }
  #log { list-style: none; padding: 0; border: 1px solid #ddd; height: 10em; overflow-y: auto; margin: .8em 0; }
  #log li { padding: .15em .5em; border-bottom: 1px solid #f2f2f2; }
  #log li.me { color: #555; font-style: italic; }
  form { display: flex; gap: .5em; }
  #text { flex: 1; padding: .3em; }
</style>
</head>
<body>
<h1>heartwheel chat</h1>
<div id="status">connecting</div>
<ul id="log"></ul>
<form id="send"><input id="text" autocomplete="off" placeholder="say something"><button>send</button></form>
<script>
"use strict";
const status = document.getElementById("status");
const log = document.getElementById("log");
const text = document.getElementById("text");
window.chat = { state: "connecting", received: [], closed: null };
function show(line, mine) {
  const li = document.createElement("li");
  li.textContent = line;
  if (mine) li.className = "me";
  log.appendChild(li);
  log.scrollTop = log.scrollHeight;
}
const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/");
ws.onopen = () => {
  chat.state = "open";
  status.textContent = "connected";
  status.className = "open";
};
ws.onmessage = (e) => {
  chat.received.push(e.data);
  show(e.data, false);
};
ws.onclose = (e) => {
  chat.state = "closed";
  chat.closed = { code: e.code, reason: e.reason, at: Date.now() };
  status.textContent = "closed " + e.code + " " + (e.reason || "(no reason)");
  status.className = "closed";
};
document.getElementById("send").onsubmit = (e) => {
  e.preventDefault();
  if (ws.readyState !== WebSocket.OPEN || text.value === "") return;
  ws.send(text.value);
  show("me: " + text.value, true);
  text.value = "";
};
</script>
</body>
</html>
)html";

#endif
