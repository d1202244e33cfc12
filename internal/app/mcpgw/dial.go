package mcpgw

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connection is what the gateway holds of one server besides the MCP
// session: the process it started (for a command), the count that
// bounds each message, and the end of the server's stderr.
type connection struct {
	cmd    *exec.Cmd
	stderr *tail
	over   atomic.Bool // a message passed MaxMessageBytes
	done   chan struct{}
	once   sync.Once
}

// dial starts srv's command, or prepares a client for its url. Only the
// person's configuration reaches here: nothing an agent or a client sends
// names a program.
func dial(srv Server) (*connection, mcp.Transport, error) {
	c := &connection{stderr: &tail{}, done: make(chan struct{})}
	if srv.URL != "" {
		close(c.done)
		hc := &http.Client{
			Transport: &bounded{rt: http.DefaultTransport, c: c},
			// A redirect would send the call's arguments to an address the
			// person did not configure.
			CheckRedirect: func(*http.Request, []*http.Request) error { return errors.New("the gateway does not follow redirects") },
		}
		return c, &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc, MaxRetries: -1, MaxEventSize: MaxMessageBytes}, nil
	}
	cmd := exec.Command(srv.Command, srv.Args...)
	cmd.Env = os.Environ()
	for k, v := range srv.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = c.stderr
	ownGroup(cmd)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	c.cmd = cmd
	go func() {
		_ = cmd.Wait()
		close(c.done)
	}()
	r := &lineLimit{r: out, c: c, closeFn: c.close}
	// lineLimit enforces the bound and says so; the SDK's own, above
	// it, never trips first.
	return c, &mcp.IOTransport{Reader: r, Writer: in, MaxLineLength: 2 * MaxMessageBytes}, nil
}

// close stops the server's process and every process it started (its
// process group), and waits for it.
func (c *connection) close() {
	if c == nil {
		return
	}
	c.once.Do(func() {
		if c.cmd != nil && c.cmd.Process != nil {
			killGroup(c.cmd)
			<-c.done
		}
	})
}

func (c *connection) alive() bool {
	select {
	case <-c.done:
		return c.cmd == nil // an HTTP server has no process to have ended
	default:
		return true
	}
}

func (c *connection) tooLarge() bool { return c != nil && c.over.Load() }

func (c *connection) stderrTail() string {
	if c == nil {
		return ""
	}
	return c.stderr.String()
}

// lineLimit counts each newline-delimited message from a server's stdout
// and ends the stream at the first past MaxMessageBytes, noting why, so
// the failure is reported as too_large and not as a broken server.
type lineLimit struct {
	r       io.ReadCloser
	c       *connection
	n       int
	closeFn func()
}

func (l *lineLimit) Read(p []byte) (int, error) {
	if l.c.over.Load() {
		return 0, errors.New("message too large")
	}
	n, err := l.r.Read(p)
	b := p[:n]
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			l.n += len(b)
			break
		}
		l.n += i
		if l.n > MaxMessageBytes {
			break
		}
		l.n, b = 0, b[i+1:]
	}
	if l.n > MaxMessageBytes {
		l.c.over.Store(true)
		return 0, errors.New("message too large")
	}
	return n, err
}

func (l *lineLimit) Close() error {
	l.closeFn()
	return l.r.Close()
}

// bounded limits each response body of a server reached by URL to
// MaxMessageBytes, except the standing event stream, whose events the
// SDK bounds one by one (MaxEventSize).
type bounded struct {
	rt http.RoundTripper
	c  *connection
}

func (b *bounded) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.rt.RoundTrip(req)
	if err != nil || req.Method == http.MethodGet {
		return resp, err
	}
	resp.Body = &bodyLimit{rc: resp.Body, c: b.c, left: MaxMessageBytes}
	return resp, nil
}

type bodyLimit struct {
	rc   io.ReadCloser
	c    *connection
	left int64
}

func (l *bodyLimit) Read(p []byte) (int, error) {
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.rc.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		l.c.over.Store(true)
		return 0, errors.New("message too large")
	}
	return n, err
}

func (l *bodyLimit) Close() error { return l.rc.Close() }

// tail keeps the last bytes a server wrote to stderr, for the message
// that reports its failure.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 512

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailBytes:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}
