"""Opens an `mfu report` page in headless Chromium and says what a reader would see, as JSON.

    python3 browser_check.py REPORT.html [--sort-column N] [--screenshot OUT.png [--full-page]] [--width W --height H]

Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe), so nothing listens on
a port and no package beyond Python's own is needed. It reports: console messages and uncaught
exceptions, every request the page made other than loading itself, the milliseconds from navigation to
the page's script having drawn everything (`data-ready`), the series drawn (`data-series`), the canvases,
the summary table's header and rows as text, each goodput bar's label, the relaunches marked on the MFU chart, the audits of the frameworks' own MFU, and, with --sort-column, the rows after a real mouse click
on that column's header (twice: ascending, then descending).
"""

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
]


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """A Chromium process and the DevTools protocol over its pipe (fd 3 in, fd 4 out)."""

    def __init__(self, width, height):
        self.profile = tempfile.mkdtemp(prefix="mfu-chromium-")
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def fds():
            # Chromium reads commands on fd 3 and writes on fd 4; the pipes' own numbers may be those,
            # so both move out of the way first.
            high_r, high_w = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.proc = subprocess.Popen(
            [chromium(), *CHROMIUM_FLAGS, "--remote-debugging-pipe", f"--user-data-dir={self.profile}",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=fds, pass_fds=(3, 4),
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def _read(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.from_chrome, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed its pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method, timeout=30.0):
        deadline = time.time() + timeout
        for event in self.events:
            if event.get("method") == method:
                return event
        while time.time() < deadline:
            event = self._read()
            self.events.append(event)
            if event.get("method") == method:
                return event
        raise RuntimeError(f"no {method} within {timeout} s")

    def close(self):
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("report")
    parser.add_argument("--sort-column", type=int)
    parser.add_argument("--screenshot")
    parser.add_argument("--full-page", action="store_true", help="the screenshot holds the whole page, not the window")
    parser.add_argument("--width", type=int, default=1300)
    parser.add_argument("--height", type=int, default=900)
    args = parser.parse_args()
    if chromium() is None:
        print(json.dumps({"skipped": "no chromium (Debian: apt-get install chromium)"}))
        return
    url = "file://" + os.path.abspath(args.report)
    browser = Browser(args.width, args.height)
    try:
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            browser.send(f"{domain}.enable", session=session)

        def evaluate(expression):
            result = browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                                  session=session)
            return result.get("result", {}).get("value")

        started = time.time()
        browser.send("Page.navigate", {"url": url}, session=session)
        browser.wait_for("Page.loadEventFired")
        ready_ms = None
        deadline = time.time() + 60
        while time.time() < deadline:
            if evaluate("document.body && document.body.getAttribute('data-ready')") == "true":
                ready_ms = round((time.time() - started) * 1000)
                break
            time.sleep(0.02)

        rows_js = ("Array.from(document.querySelectorAll('#summary tbody tr'))"
                   ".map(tr => Array.from(tr.cells).map(c => c.textContent))")
        report = {
            "ready_ms": ready_ms,
            "series": evaluate("document.body.getAttribute('data-series')"),
            "canvases": evaluate("document.querySelectorAll('canvas').length"),
            "header": evaluate("Array.from(document.querySelectorAll('#summary thead th')).map(th => th.textContent)"),
            "rows": evaluate(rows_js),
            "devices": evaluate("Array.from(document.querySelectorAll('#devices h3')).map(h => h.textContent)"),
            "warnings": evaluate("Array.from(document.querySelectorAll('#devices .warning')).map(p => p.textContent)"),
            "goodput": evaluate("Array.from(document.querySelectorAll('#goodput .goodput-bar')).map(b => b.getAttribute('aria-label'))"),
            "relaunches": evaluate("document.getElementById('chart-mfu').getAttribute('data-relaunches')"),
            "audits": evaluate("Array.from(document.querySelectorAll('#audits p')).map(p => p.textContent)"),
        }
        if args.sort_column is not None:
            sorted_rows = []
            for _ in range(2):
                box = evaluate(
                    f"(() => {{ const r = document.querySelector('#summary th[data-column=\"{args.sort_column}\"]')"
                    ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
                for kind in ("mousePressed", "mouseReleased"):
                    browser.send("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1],
                                                              "button": "left", "clickCount": 1}, session=session)
                sorted_rows.append(evaluate(rows_js))
            report["sorted"] = sorted_rows
        if args.screenshot:
            if args.full_page:
                height = evaluate("document.documentElement.scrollHeight")
                browser.send("Emulation.setDeviceMetricsOverride",
                             {"width": args.width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                             session=session)
            shot = browser.send("Page.captureScreenshot", {"format": "png"}, session=session)
            with open(args.screenshot, "wb") as f:
                f.write(base64.b64decode(shot["data"]))
        # What the page said and asked for, from the events gathered along the way.
        console, exceptions, requests = [], [], []
        for event in browser.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled":
                console.append({"type": params.get("type"),
                                "text": " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))})
            elif method == "Log.entryAdded":
                entry = params.get("entry", {})
                if entry.get("level") in ("error", "warning"):
                    console.append({"type": entry.get("level"), "text": entry.get("text")})
            elif method == "Runtime.exceptionThrown":
                exceptions.append(params.get("exceptionDetails", {}).get("text"))
            elif method == "Network.requestWillBeSent":
                requested = params.get("request", {}).get("url")
                if requested != url:
                    requests.append(requested)
        report.update(console=console, exceptions=exceptions, requests=requests)
        print(json.dumps(report))
    finally:
        browser.close()


if __name__ == "__main__":
    sys.exit(main())
