#!/usr/bin/python3
"""A real browser for the tests: Debian's headless Chromium, driven over the DevTools protocol
(standard library only).

    headless_browser.py URL [--click CSS_SELECTOR] [--timeout SECONDS]

Opens URL in a fresh page and waits for its load event. With --click, clicks the first element
matching CSS_SELECTOR (a form's submit button) and waits for the document that click loads.
Then prints one line of JSON:

    {"url": ..., "title": ..., "text": document.body.innerText, "status": HTTP status or null}

`status` is that of the final main-frame document's response (after redirects), null when
Chromium reported none. An HTTP error status (404, 500) is not a failure: it is reported.

Exits 1, with the reason on stderr, when: URL cannot be loaded (nothing listening, connection
reset: Chromium's error page is not reported as a result), no element matches the selector (or
it is not a valid selector), the click loads no new document, the document the click leads to
fails to load, or the whole run takes longer than --timeout seconds (default 30). Chromium is
always killed (its whole process group) and its temporary profile removed.

Protocol: --remote-debugging-pipe makes Chromium read commands on its fd 3 and write replies
and events on its fd 4, each a JSON object terminated by a NUL byte.
"""
import argparse, fcntl, json, os, select, shutil, signal, subprocess, sys, tempfile, time

CHROMIUM = "/usr/bin/chromium"


class Failed(Exception):
    pass


class Browser:
    def __init__(self, deadline):
        self.deadline = deadline
        self.profile = tempfile.mkdtemp(prefix="hearth-chromium-")
        self.process = None
        self.next_id = 0
        self.buffer = b""
        self.events = []  # received but not yet consumed, oldest first
        self.session = None
        # What the main frame's documents did: its id, the requests that loaded a document
        # into it, the last such response's status, and the error of one that failed.
        self.frame = None
        self.document_requests = set()
        self.status = None
        self.failure = None

    # -- process ------------------------------------------------------------------------------

    def start(self):
        arguments = [
            CHROMIUM,
            "--headless=new",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--no-proxy-server",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--disable-extensions",
            "--metrics-recording-only",
            "--password-store=basic",
            "--use-mock-keychain",
            "--mute-audio",
            "--user-data-dir=" + self.profile,
            "--remote-debugging-pipe",
        ]
        if os.geteuid() == 0:
            arguments.append("--no-sandbox")
        arguments.append("about:blank")

        # Chromium expects its ends of the two pipes at fds 3 and 4 exactly. Put every end
        # high (close-on-exec), then lend fds 3 and 4 to the child's ends just for the spawn.
        command_read, command_write = (high(fd) for fd in os.pipe())
        reply_read, reply_write = (high(fd) for fd in os.pipe())
        saved = {}
        for fd in (3, 4):
            try:
                saved[fd] = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
            except OSError:
                pass
        try:
            os.dup2(command_read, 3, inheritable=False)
            os.dup2(reply_write, 4, inheritable=False)
            self.log = open(os.path.join(self.profile, "chromium-stderr.log"), "wb")
            self.process = subprocess.Popen(
                arguments,
                stdin=subprocess.DEVNULL,
                # Never this script's stdout/stderr: a renderer outliving it would hold the
                # test's pipes open.
                stdout=subprocess.DEVNULL,
                stderr=self.log,
                pass_fds=(3, 4),
                start_new_session=True,  # its own process group, killed as a whole
            )
        finally:
            for fd in (3, 4):
                if fd in saved:
                    os.dup2(saved[fd], fd, inheritable=False)
                    os.close(saved[fd])
                else:
                    os.close(fd)
            os.close(command_read)
            os.close(reply_write)
        self.commands = command_write
        self.replies = reply_read

    def stop(self, gracefully=False):
        if self.process is not None:
            if gracefully:
                # Browser.close lets Chromium end its own children and write its profile.
                try:
                    self.send("Browser.close", session=False)
                    end = time.monotonic() + 3
                    while time.monotonic() < end and not self.exited():
                        time.sleep(0.02)
                except Failed:
                    pass
            # Whatever is left of the group. The leader is not reaped yet (at most a zombie),
            # so its id, the group's, cannot have been reused.
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        for name in ("commands", "replies"):
            fd = getattr(self, name, None)
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
                setattr(self, name, None)
        if getattr(self, "log", None):
            self.log.close()
        # A killed child can still be writing its last file: try again once.
        for _ in range(2):
            shutil.rmtree(self.profile, ignore_errors=True)
            if not os.path.exists(self.profile):
                break
            time.sleep(0.2)

    def exited(self):
        """Whether Chromium has exited, without reaping it."""
        flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
        return os.waitid(os.P_PID, self.process.pid, flags) is not None

    def chromium_log(self, lines=15):
        try:
            with open(os.path.join(self.profile, "chromium-stderr.log"), "rb") as f:
                text = f.read().decode("utf-8", "replace").strip().splitlines()
        except OSError:
            return ""
        # Without a D-Bus (a container), Chromium logs a dozen failed connections: never the cause.
        return "\n".join([line for line in text if "dbus/" not in line][-lines:])

    # -- protocol -----------------------------------------------------------------------------

    def send(self, method, params=None, session=True):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session is not None:
            message["sessionId"] = self.session
        data = json.dumps(message).encode() + b"\0"
        try:
            while data:
                data = data[os.write(self.commands, data):]
        except BrokenPipeError:
            raise Failed("chromium exited (its command pipe closed)")
        return self.next_id

    def receive(self, what):
        """The next message from Chromium, waiting until the deadline."""
        while b"\0" not in self.buffer:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise Failed("timed out waiting for " + what)
            ready, _, _ = select.select([self.replies], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.replies, 1 << 16)
            if not chunk:
                raise Failed("chromium exited while waiting for " + what)
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None, session=True):
        """Sends a command and returns its result; events that arrive meanwhile are kept."""
        sent = self.send(method, params, session)
        while True:
            message = self.receive("the reply to " + method)
            if message.get("id") == sent:
                if "error" in message:
                    raise Failed("%s failed: %s" % (method, message["error"].get("message", message["error"])))
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def wait_for(self, method, what):
        """The first event `method` of our session, from those kept or those to come; every
        event before it is consumed (and given to `self.observe`)."""
        while True:
            if self.events:
                event = self.events.pop(0)
            else:
                event = self.receive(what)
                if "method" not in event:
                    continue
            if event.get("sessionId") != self.session:
                continue
            self.observe(event)
            if event["method"] == method:
                return event.get("params", {})

    # -- what the page's documents did --------------------------------------------------------

    def observe(self, event):
        params = event.get("params", {})
        method = event["method"]
        main_document = params.get("type") == "Document" and params.get("frameId") == self.frame
        if method == "Network.requestWillBeSent" and main_document:
            self.document_requests.add(params["requestId"])
        elif method == "Network.responseReceived" and main_document:
            self.status = params["response"].get("status")
        elif method == "Network.loadingFailed" and params.get("requestId") in self.document_requests:
            if not params.get("canceled"):
                self.failure = params.get("errorText", "loading failed")

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            description = details.get("exception", {}).get("description") or details.get("text")
            raise Failed("script threw: %s" % description)
        return result.get("result", {}).get("value")


def high(fd):
    """`fd` moved to a number of at least 10 (close-on-exec)."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


def run(url, selector, timeout):
    browser = Browser(time.monotonic() + timeout)
    succeeded = False
    try:
        browser.start()
        target = browser.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        browser.session = browser.call(
            "Target.attachToTarget", {"targetId": target, "flatten": True}, session=False
        )["sessionId"]
        browser.frame = target  # a page target's id is its main frame's id
        browser.call("Page.enable")
        browser.call("Network.enable")
        browser.call("Runtime.enable")
        browser.events.clear()  # about:blank's

        navigated = browser.call("Page.navigate", {"url": url})
        if navigated.get("errorText"):
            raise Failed("cannot load %s: %s" % (url, navigated["errorText"]))
        browser.frame = navigated.get("frameId", browser.frame)
        browser.wait_for("Page.loadEventFired", "the load event of " + url)
        if browser.failure:
            raise Failed("cannot load %s: %s" % (url, browser.failure))

        if selector is not None:
            browser.status = None
            browser.document_requests.clear()
            clicked = browser.evaluate(
                "(() => { const e = document.querySelector(%s); if (!e) return false; e.click(); return true; })()"
                % json.dumps(selector)
            )
            if not clicked:
                raise Failed("no element matches %s on %s" % (selector, url))
            browser.wait_for("Page.loadEventFired", "the page that clicking %s loads" % selector)
            if browser.failure:
                raise Failed("the page that clicking %s loads failed: %s" % (selector, browser.failure))

        page = browser.evaluate(
            "({url: document.URL, title: document.title, text: document.body ? document.body.innerText : ''})"
        )
        page["status"] = browser.status
        succeeded = True
        return page
    except Failed as failure:
        log = browser.chromium_log()
        if log and ("exited" in str(failure) or "timed out" in str(failure)):
            raise Failed("%s\nchromium's stderr (last lines):\n%s" % (failure, log))
        raise
    finally:
        browser.stop(gracefully=succeeded)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("--click", metavar="CSS_SELECTOR")
    parser.add_argument("--timeout", type=float, default=30)
    options = parser.parse_args()

    # `Process.terminate()` (SIGTERM) and ^C still clean up: Chromium killed, profile removed.
    def interrupted(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # let the cleanup finish
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise Failed("interrupted by signal %d" % signum)

    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    try:
        page = run(options.url, options.click, options.timeout)
    except Failed as failure:
        print("headless_browser: %s" % failure, file=sys.stderr)
        return 1
    except Exception as error:  # noqa: BLE001 — anything unexpected still exits 1 with a reason
        print("headless_browser: %s: %s" % (type(error).__name__, error), file=sys.stderr)
        return 1
    print(json.dumps(page))
    return 0


if __name__ == "__main__":
    sys.exit(main())
