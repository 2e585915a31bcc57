package inject

// The loopback dashboard proxy of a sidecar injected into a Ray cluster
// that runs with Ray's token authentication.
//
// The image carries no imagectl binary (dockerfiles/Dockerfile copies the
// Python runtime, the packages and the extensions only), but every image
// has its Python interpreter at imagespec.InterpreterPath: the proxy is
// TokenProxyScript, standard library only, run by that interpreter as the
// container's command. linuxserver's entrypoint (s6-overlay's /init)
// starts its services (code-server) first and then runs the command as
// root; when the command ends, the container stops and the kubelet
// restarts it.

const (
	// TokenProxyPort is where the proxy listens, on 127.0.0.1 of the head
	// pod (the sidecar shares the pod's network with the Ray container),
	// unless that port is taken (proxyPort).
	TokenProxyPort = 8266
	// TokenMountPath is where the sidecar mounts the Secret that holds
	// the token (outside /run, which s6-overlay manages), and TokenFile
	// the one file it projects there.
	TokenMountPath = "/etc/imagectl/ray-auth"
	TokenFile      = TokenMountPath + "/token"
	// TokenVolume names the Secret volume inject adds to the head pod.
	TokenVolume = "imagectl-ray-token"
	// TokenFileMode is the file's mode (0400): root, the proxy's user,
	// reads it; code-server runs as PUID (abc) and does not, unless the
	// pod's fsGroup, which the kubelet gives the file with group read, is
	// code-server's group too.
	TokenFileMode = 0o400
	// KubeRayTokenKey is the key of KubeRay's token Secret
	// (RAY_AUTH_TOKEN_SECRET_KEY, ray-operator utils/constant.go).
	KubeRayTokenKey = "auth_token"
)

// TokenProxyScript is the proxy, a Python program run as
//
//	python3 -c TokenProxyScript LISTEN UPSTREAM TOKEN_FILE
//
// LISTEN and UPSTREAM are host:port. It reads the token from TOKEN_FILE
// (surrounding whitespace trimmed) when it starts, failing with a message
// naming the file when it cannot or the file is empty, and again for each
// request, so a Secret updated in place is followed. It forwards GET and
// HEAD requests (the debugger extension's State API and Jobs API reads)
// to UPSTREAM with "Authorization: Bearer <token>", the header Ray's
// dashboard middleware reads first (so a client's own Authorization,
// X-Ray-Authorization or cookie cannot override it), and answers any
// other method with 405: through the proxy, code-server and its users
// read the dashboard but submit, stop or delete no job. Hop-by-hop
// headers are dropped; the answer's status, headers and body are passed
// back. It logs one line when it starts and one per failure, never a
// request, a header or the token; a failure is a 502 with the same text.
const TokenProxyScript = `import http.client, http.server, sys
listen, upstream, path = sys.argv[1:4]
DROP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
        "transfer-encoding", "upgrade", "host", "content-length", "authorization"}
def say(msg):
    sys.stderr.write("imagectl dashboard proxy: %s\n" % msg)
    sys.stderr.flush()
def token():
    with open(path) as f:
        t = f.read().strip()
    if not t:
        raise ValueError("%s is empty" % path)
    return t
def hostport(a):
    h, _, p = a.rpartition(":")
    return h.strip("[]"), int(p)
class Proxy(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass
    def answer(self, code, msg, allow=None):
        body = ("imagectl dashboard proxy: %s\n" % msg).encode()
        self.send_response_only(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        if allow:
            self.send_header("Allow", allow)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
    def refuse(self):
        self.answer(405, "%s: only GET and HEAD go to the Ray dashboard through this proxy" % self.command, "GET, HEAD")
    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = refuse
    def do_GET(self):
        try:
            tok = token()
        except (OSError, ValueError) as e:
            say("reading the Ray token: %s" % e)
            return self.answer(502, "reading the Ray token: %s" % e)
        conn = http.client.HTTPConnection(*hostport(upstream), timeout=300)
        try:
            conn.putrequest(self.command, self.path, skip_accept_encoding=True)
            for k, v in self.headers.items():
                if k.lower() not in DROP:
                    conn.putheader(k, v)
            conn.putheader("Authorization", "Bearer " + tok)
            conn.endheaders()
            r = conn.getresponse()
            body = r.read()
        except (OSError, http.client.HTTPException) as e:
            msg = "%s %s (dashboard at %s): %s" % (self.command, self.path.split("?")[0], upstream, e)
            say(msg)
            return self.answer(502, msg)
        finally:
            conn.close()
        self.send_response_only(r.status, r.reason)
        for k, v in r.getheaders():
            if k.lower() not in DROP or (k.lower() == "content-length" and self.command == "HEAD"):
                self.send_header(k, v)
        if self.command != "HEAD":
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
    do_HEAD = do_GET
try:
    token()
except (OSError, ValueError) as e:
    say("cannot read the Ray token: %s" % e)
    sys.exit(1)
server = http.server.ThreadingHTTPServer(hostport(listen), Proxy)
say("listening on %s:%d, forwarding GET and HEAD to the Ray dashboard at %s with the token of %s" % (server.server_address[:2] + (upstream, path)))
server.serve_forever()
`
