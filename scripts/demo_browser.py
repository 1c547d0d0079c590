#!/usr/bin/env python3
"""demo_browser.py — the demo's browser scene: ws_chat_server serves its own page on its WebSocket port
and two headless Chromium pages (Selenium over chromium-driver) chat through it, typed in as a person
would; the browser answers the server's ping frames by itself, so with reader idle off and a ping every
500 ms both pages stay while they say nothing; a tab closed is seen leaving at once; then SIGTERM
drains the server and the page left shows why it was closed ("closed 1012 draining"). Run by demo.py
(exit 0 when the scene went as scripted; 3 when Chromium, its driver or Selenium is missing)."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
except ImportError:  # a Python without Debian's packages (pyenv, a venv): Debian's own has them
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    print("browser scene skipped: python3-selenium is not installed (scripts/install-deps.sh installs it)")
    sys.exit(3)

BUILD = os.environ.get("HEARTWHEEL_BUILD", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
SERVER = os.path.join(BUILD, "examples", "ws_chat_server")
T0 = float(os.environ.get("DEMO_T0", time.time()))
CONFIG = '[idle]\nreader_idle = 0\n[heartbeat]\ninterval = "500ms"\ntimeout = "500ms"\nmisses = 2\n'


def say(who, what):
    print(f"[{time.time() - T0:5.1f}s] {who:<12} {what}", flush=True)


def until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    return None


def main():
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver_path:
        print("browser scene skipped: chromium and chromium-driver are not installed (scripts/install-deps.sh installs them)")
        return 3
    with tempfile.TemporaryDirectory() as d:
        config = os.path.join(d, "live.toml")
        with open(config, "w") as f:
            f.write(CONFIG)
        server = subprocess.Popen([SERVER, "--listen", "127.0.0.1:0", "--config", config, "--drain-window", "500"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        url = "http://" + server.stdout.readline().split()[-1] + "/"
        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=760,480"):
            options.add_argument(arg)  # --no-sandbox: the demo may run as root, where the sandbox refuses
        browser = webdriver.Chrome(service=Service(driver_path), options=options)
        ok = False
        try:
            def state(tab):
                browser.switch_to.window(tab)
                return browser.execute_script("return window.chat || {state: 'loading'}")

            def status(tab):
                browser.switch_to.window(tab)
                return browser.find_element(By.ID, "status").text

            tabs = []
            for name in ("alice", "bob", "carol"):
                if tabs:
                    browser.switch_to.new_window("tab")
                browser.get(url)
                tabs.append(browser.current_window_handle)
                until(lambda: state(tabs[-1])["state"] == "open")
                say(f"page {name}", f"{url} loaded: {status(tabs[-1])}")
            alice, bob, carol = tabs
            browser.switch_to.window(alice)
            browser.find_element(By.ID, "text").send_keys("hello from a browser")
            browser.find_element(By.CSS_SELECTOR, "#send button").click()
            got = until(lambda: state(bob)["received"])
            say("page bob", f"shows {got}")
            time.sleep(3)
            say("pages", f"3 s of silence, a ping every 500 ms answered by the browser itself: "
                         f"{', '.join(state(t)['state'] for t in tabs)}")
            browser.switch_to.window(carol)
            browser.close()
            say("page carol", "tab closed (the browser says 1001 going away)")
            server.send_signal(signal.SIGTERM)
            say("server", "SIGTERM: a drain over 500 ms")
            seen = [until(lambda t=t: state(t)["closed"]) for t in (alice, bob)]
            for name, tab in (("alice", alice), ("bob", bob)):
                say(f"page {name}", f"shows \"{status(tab)}\"")
            ok = got == ["hello from a browser"] and all(s and s["code"] == 1012 for s in seen)
        finally:
            browser.quit()
            if server.poll() is None:
                server.send_signal(signal.SIGTERM)
            out, _ = server.communicate(timeout=15)
            final = [line for line in out.splitlines() if line.startswith("final ")]
            say("ws_chat", final[0] if final else "(no final line)")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
