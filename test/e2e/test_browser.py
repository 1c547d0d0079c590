"""test_browser.py — a browser as the WebSocket chat's client: headless Chromium, driven by Selenium over
chromium-driver (Debian's chromium, chromium-driver, python3-selenium), against examples/ws_chat_server,
which serves its own page on its WebSocket port (examples/ws_chat/chat_page.hpp).

A browser is the client the chat's users have, and it does what no test client does by itself: it
answers the server's ping frames in its network stack (no script runs for them, and a background tab's
throttled timers do not delay them), reconnects nothing on its own, and sends close 1001 when a page
goes away. The page keeps its state in window.chat (state, received, closed = {code, reason, at}) and
shows the close's code and reason; the tests read both.

- Two pages chat through the server; a page closed and a page navigated away are seen closed by the
  server (its members gauge on /metrics drops) and counted peer-closed; SIGTERM drains and each page
  shows why it was closed ("closed 1012 draining").
- With reader idle off and a heartbeat on, a page left open 60 s in a background tab is never closed;
  then the browser's network is cut (the server in one network namespace, the browser in another,
  every packet the browser sends dropped — test/fault/netns.py): the server closes each page
  heartbeat-timeout at the time its policy says, never before, judged where the network sees it (the
  server's side leaving ESTABLISHED); once the path is back the page learns it was closed. This part
  needs root for the namespaces and says so when it cannot run.

Skipped with the reason when Chromium, its driver or Selenium is missing (scripts/install-deps.sh
installs them). HEARTWHEEL_SCREENSHOTS=DIR saves what the pages showed (docs/browser_chat.png and
docs/browser_drained.png are written so: `HEARTWHEEL_SCREENSHOTS=docs python3 test/e2e/test_browser.py`).
Bounded in time: every wait has its limit."""
import os
import re
import shutil
import signal
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fault"))
from harness import BUILD, FramedServer, debian_module  # noqa: E402
import netns  # noqa: E402

try:
    webdriver = debian_module("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service  # noqa: E402
    from selenium.webdriver.common.by import By  # noqa: E402
except ImportError:  # the test command installs python3-selenium; without it the tests say so
    webdriver = None
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
MISSING = ("Selenium is not installed (python3-selenium)" if webdriver is None else
           "Chromium is not installed (chromium)" if CHROMIUM is None else
           "ChromeDriver is not installed (chromium-driver)" if DRIVER is None else None)
if MISSING:
    MISSING += "; scripts/install-deps.sh installs it"

SERVER = os.path.join(BUILD, "examples", "ws_chat_server")
SANITIZED = bool(os.environ.get("HEARTWHEEL_SANITIZE"))
SCREENSHOTS = os.environ.get("HEARTWHEEL_SCREENSHOTS")
LATE = 1.5 if SANITIZED else 0.5  # how late a verdict may be seen: a wheel tick, a loaded machine, the poll
KEPT_OPEN = float(os.environ.get("HEARTWHEEL_BROWSER_OPEN_S", "60"))  # how long the left-open page is watched

# Reader idle off, a WebSocket ping after 1 s without a byte from the page, answered within 1 s, dead
# at the second miss: a cut page is closed 2..3 s after its last pong (heartbeat.hpp's formula).
HEARTBEAT = "[idle]\nreader_idle = 0\n[heartbeat]\ninterval = \"1s\"\ntimeout = \"1s\"\nmisses = 2\n"


class ChatServer(FramedServer):
    """ws_chat_server with `config` and its /metrics on the same host; members() reads its gauge."""

    def __init__(self, config, *flags, host="127.0.0.1", prefix=()):
        self.dir = tempfile.TemporaryDirectory()
        path = os.path.join(self.dir.name, "live.toml")
        with open(path, "w") as f:
            f.write(config)
        super().__init__(SERVER, "messages", "--config", path, "--metrics", f"{host}:0", *flags, host=host,
                         prefix=prefix)
        line = self.proc.stdout.readline()
        assert line.startswith("metrics on "), line
        self.metrics = line.split()[-1]

    def url(self, path="/"):
        return f"http://{self.host}:{self.port}{path}"

    def members(self):
        with urllib.request.urlopen(f"http://{self.metrics}/metrics", timeout=5) as r:
            body = r.read().decode()
        return int(re.search(r"^ws_chat_members (\d+)", body, re.M).group(1))

    def __exit__(self, *exc):
        super().__exit__(*exc)
        self.dir.cleanup()


def wait_until(what, predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {timeout} s")


class Browser:
    """One headless Chromium; page(url) opens a tab on the chat and waits until its WebSocket is open."""

    def __init__(self):
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        # --no-sandbox: the test command runs as root, where Chromium's sandbox refuses to start.
        for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                    "--window-size=760,480", "--no-first-run", "--disable-extensions"):
            options.add_argument(arg)
        self.driver = webdriver.Chrome(service=Service(DRIVER), options=options)
        self.driver.set_page_load_timeout(20)
        self.tabs = []

    def page(self, url):
        if self.tabs:
            self.driver.switch_to.new_window("tab")
        self.driver.get(url)
        tab = self.driver.current_window_handle
        self.tabs.append(tab)
        wait_until("the page's WebSocket opened", lambda: self.state(tab)["state"] == "open", 20)
        return tab

    def state(self, tab):
        self.driver.switch_to.window(tab)
        return self.driver.execute_script("return window.chat || {state: 'loading'}")

    def say(self, tab, text):
        """Types `text` into the page's box and presses its button, as a person would."""
        self.driver.switch_to.window(tab)
        box = self.driver.find_element(By.ID, "text")
        box.send_keys(text)
        self.driver.find_element(By.CSS_SELECTOR, "#send button").click()

    def shown_status(self, tab):
        self.driver.switch_to.window(tab)
        return self.driver.find_element(By.ID, "status").text

    def screenshot(self, tab, name):
        if SCREENSHOTS:
            self.driver.switch_to.window(tab)
            self.driver.save_screenshot(os.path.join(SCREENSHOTS, name))

    def quit(self):
        self.driver.quit()


@unittest.skipIf(MISSING, MISSING or "")
class BrowserChat(unittest.TestCase):
    def test_two_pages_chat_a_page_closed_or_left_is_seen_closed_and_a_drain_is_shown(self):
        with ChatServer(HEARTBEAT, "--drain-window", "300") as srv:
            browser = Browser()
            try:
                a, b, c, d = (browser.page(srv.url()) for _ in range(4))
                wait_until("four members", lambda: srv.members() == 4, 10)
                browser.say(a, "hello from a browser")
                wait_until("b got a's message", lambda: browser.state(b)["received"] == ["hello from a browser"], 10)
                browser.say(b, "and hello back")
                wait_until("a got b's answer", lambda: browser.state(a)["received"] == ["and hello back"], 10)
                self.assertEqual(browser.state(c)["received"], ["hello from a browser", "and hello back"])
                browser.screenshot(a, "browser_chat.png")
                # A tab closed: the browser sends close 1001 (going away) and the server sees it at once.
                browser.driver.switch_to.window(c)
                browser.driver.close()
                wait_until("the closed page left the room", lambda: srv.members() == 3, 10)
                # A page navigated away (to the server's 404, a plain request on the same port): the same.
                browser.driver.switch_to.window(d)
                browser.driver.get(srv.url("/elsewhere"))
                wait_until("the page navigated away left the room", lambda: srv.members() == 2, 10)
                self.assertIn("not found", browser.driver.page_source)
                # The two left chat on.
                browser.say(a, "still here")
                wait_until("b got it", lambda: browser.state(b)["received"] == ["hello from a browser", "still here"], 10)
                # A deploy as a browser sees it: SIGTERM drains, each page is asked to leave with close
                # 1012 (service restart) and shows it.
                srv.proc.send_signal(signal.SIGTERM)
                for tab in (a, b):
                    seen = wait_until("the page saw the drain", lambda tab=tab: browser.state(tab)["closed"], 10)
                    self.assertEqual((seen["code"], seen["reason"]), (1012, "draining"))
                    self.assertEqual(browser.shown_status(tab), "closed 1012 draining")
                browser.screenshot(a, "browser_drained.png")
            finally:
                browser.quit()
            closes, messages = srv.stop()
            self.assertEqual(messages, 3)
            # Two pages closed by the browser, two drained; five or six plain requests answered (four
            # pages, the 404, and the icon the browser may ask for beside a page that names none). A
            # spare connection the browser opened ahead and never used is closed by its browser
            # (peer-closed) or by the drain (draining); nothing else is counted.
            self.assertGreaterEqual(closes.get("draining", 0), 2, closes)
            self.assertIn(closes.get("http-served"), (5, 6), closes)
            self.assertGreaterEqual(closes.get("peer-closed", 0), 2, closes)
            self.assertEqual(set(closes) - {"http-served", "peer-closed", "draining"}, set(), closes)


@unittest.skipIf(MISSING, MISSING or "")
class BrowserHeartbeat(unittest.TestCase):
    """The server in one namespace, this test and its browser in another (netns.Network)."""

    @classmethod
    def setUpClass(cls):
        reason = netns.unavailable()
        if reason:
            raise unittest.SkipTest(f"the network cut needs namespaces: {reason}")
        cls.net = netns.Network()

    @classmethod
    def tearDownClass(cls):
        cls.net.close()

    def page_ports(self, srv):
        """The browser's ports of the WebSocket connections the server holds established."""
        out = self.net.exec_in(self.net.srv, "ss", "-Htn", "state", "established", f"( sport = :{srv.port} )").stdout
        return {int(line.split()[-1].rsplit(":", 1)[1]) for line in out.splitlines() if line.strip()}

    def test_a_page_left_open_stays_and_a_cut_page_is_closed_heartbeat_timeout_at_its_time(self):
        with ChatServer(HEARTBEAT, host=netns.SERVER_IP, prefix=self.net.server_prefix) as srv:
            browser = Browser()
            try:
                left = browser.page(srv.url())  # in a background tab from the next line on
                other = browser.page(srv.url())
                opened = time.monotonic()
                # Watched from both sides: the page stays open and the server keeps it a member.
                while time.monotonic() - opened < KEPT_OPEN:
                    self.assertEqual(browser.state(left)["state"], "open", "the page left open was closed")
                    self.assertEqual(srv.members(), 2)
                    time.sleep(min(5.0, max(0.0, KEPT_OPEN - (time.monotonic() - opened))))
                browser.say(other, f"after {KEPT_OPEN:.0f} s")
                wait_until("the page left open still chats",
                           lambda: browser.state(left)["received"] == [f"after {KEPT_OPEN:.0f} s"], 10)
                # The cut: from now on every packet the browser sends is lost. Its pongs no longer
                # arrive; nor do its acknowledgements, so after the first ping nothing the server
                # writes reaches it either (TCP waits for the lost acknowledgement): the page cannot
                # know yet. The server's verdict is seen where the network sees it, its side of each
                # connection leaving ESTABLISHED (its FIN), polled in its namespace.
                ports = self.page_ports(srv)
                self.assertEqual(len(ports), 2, ports)
                cut = time.monotonic()
                self.net.drop_peer_packets()
                gone = {}
                while len(gone) < 2 and time.monotonic() - cut < 15:
                    left_now = self.page_ports(srv)
                    for port in ports - left_now - set(gone):
                        gone[port] = time.monotonic() - cut
                    time.sleep(0.02)
                self.assertEqual(len(gone), 2, "a cut page was not closed within 15 s")
                for port, after in gone.items():
                    # The last pong came at most an interval before the cut: the first unanswered ping
                    # left 0..1 s after the cut, the death is an interval and a timeout later — 2..3 s
                    # after the cut (less the round trip of a ping sent just before it).
                    self.assertGreaterEqual(after, 1.95, f"closed {after:.2f} s after the cut: early")
                    self.assertLess(after, 3.0 + LATE, f"closed {after:.2f} s after the cut")
                    print(f"\n  [browser] a cut page closed heartbeat-timeout {after:.2f} s after the cut (2..3 s)",
                          file=sys.stderr)
                # Once the path is back the page learns its connection is gone (the server's end of it
                # is closed: a reset): closed, 1006, with no reason — the words were lost in the cut.
                self.net.heal()
                for tab in (left, other):
                    seen = wait_until("the page learnt its close", lambda tab=tab: browser.state(tab)["closed"], 15)
                    self.assertEqual(seen["code"], 1006)
            finally:
                browser.quit()
                self.net.heal()
            closes, _ = srv.stop()
            self.assertEqual(closes.get("heartbeat-timeout"), 2, closes)
            self.assertEqual(closes.get("http-served"), 2, closes)
            self.assertEqual(set(closes) - {"heartbeat-timeout", "http-served", "peer-closed"}, set(), closes)


if __name__ == "__main__":
    unittest.main(verbosity=2)
