package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
)

// Connect opens one connection for the program: scheme is "https" for a
// CONNECT tunnel, "http" for a plain request the proxy forwards, and
// hostPort its authority. It decides before it dials; an error carrying
// a reason code refuses, and the program gets a 403 with that code.
type Connect func(ctx context.Context, scheme, hostPort string) (net.Conn, error)

// Decide decides, and records, one connection of a run: the decision
// that the ACL made (with the target when it allowed), and whatever the
// caller's mediator adds (the admin policy, the person's answers). A nil
// error lets the dial go ahead.
type Decide func(ctx context.Context, scheme, hostPort string, d mediator.Decision) error

// ACLConnect decides each connection by the agent's allowedHosts (acl,
// netproxy's own parsing and matching), then by decide, and dials
// through f, which resolves the name itself and refuses an answer in a
// private range as a fetch would: one ACL for a fetch and for a program.
func ACLConnect(f *netproxy.Fetcher, acl *netproxy.ACL, decide Decide) Connect {
	return func(ctx context.Context, scheme, hostPort string) (net.Conn, error) {
		var t netproxy.Target
		d := mediator.Deny(mediator.CodeHostNotAllowed, "no allowedHosts: the program may not reach "+mediator.Truncate(hostPort, 80))
		if acl != nil {
			t, d = acl.Check(scheme + "://" + hostPort + "/")
		}
		if err := decide(ctx, scheme, hostPort, d); err != nil {
			return nil, err
		}
		if !d.Allowed {
			return nil, d.Err()
		}
		c, err := f.DialTarget(ctx, acl, t)
		var de *netproxy.DenyError
		if errors.As(err, &de) {
			return nil, mediator.Errorf(de.Code, "%s", de.Reason)
		}
		return c, err
	}
}

// Proxy is one run's network: an HTTP proxy on a Unix socket in a
// directory of its own, which the sandbox binds in and its init bridges
// to ProxyAddr. It speaks CONNECT (a tunnel, for https and anything
// else over TLS) and plain http requests in absolute form, one request
// per connection.
type Proxy struct {
	// Socket is the socket's path, for Config.Proxy.
	Socket string
	ln     net.Listener
	dir    string
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

// maxProxyConns bounds the connections one run holds open at once.
const maxProxyConns = 64

// ServeProxy starts a proxy that opens every connection with connect.
// Close stops it and every tunnel.
func ServeProxy(connect Connect) (*Proxy, error) {
	dir, err := os.MkdirTemp("", "nmhost-proxy-")
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "proxy.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := shareSocket(dir, sock); err != nil {
		ln.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	p := &Proxy{Socket: sock, ln: ln, dir: dir, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept(connect)
	return p, nil
}

// Close stops the proxy, ends every connection it holds, and removes
// its socket.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	os.RemoveAll(p.dir)
	return err
}

func (p *Proxy) track(c net.Conn, on bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		if len(p.conns) >= maxProxyConns {
			return false
		}
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
	return true
}

func (p *Proxy) accept(connect Connect) {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c, true) {
			c.Close()
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.track(c, false)
			defer c.Close()
			p.serve(c, connect)
		}()
	}
}

// serve answers one connection from the sandbox.
func (p *Proxy) serve(c net.Conn, connect Connect) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReaderSize(c, 16<<10)
	req, err := http.ReadRequest(br)
	if err != nil {
		refuse(c, http.StatusBadRequest, mediator.Errorf(mediator.CodeBadRequest, "not an HTTP request"))
		return
	}
	c.SetReadDeadline(time.Time{})
	if req.Method == http.MethodConnect {
		up, err := connect(ctx, "https", req.Host)
		if err != nil {
			refuse(c, http.StatusForbidden, err)
			return
		}
		defer up.Close()
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
		pipe(c, up, br)
		return
	}
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		refuse(c, http.StatusBadRequest, mediator.Errorf(mediator.CodeSchemeNotAllowed, "the proxy forwards http:// requests in absolute form and CONNECT tunnels only"))
		return
	}
	hostPort := req.URL.Host
	if req.URL.Port() == "" {
		hostPort = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	up, err := connect(ctx, "http", hostPort)
	if err != nil {
		refuse(c, http.StatusForbidden, err)
		return
	}
	defer up.Close()
	// One request per connection: the next one is decided anew.
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	req.Close = true
	if err := req.Write(up); err != nil {
		refuse(c, http.StatusBadGateway, mediator.Errorf(mediator.CodeUpstreamError, "sending the request: %v", err))
		return
	}
	io.Copy(c, up)
}

// pipe copies both ways until either side ends, then ends both.
func pipe(c net.Conn, up net.Conn, br *bufio.Reader) {
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, br); up.Close(); done <- struct{}{} }()
	go func() { io.Copy(c, up); c.Close(); done <- struct{}{} }()
	<-done
	<-done
}

// refuse answers with status and the refusal's reason code, in a header
// and in the body, so that a program's error message names it.
func refuse(c net.Conn, status int, err error) {
	code := mediator.CodeOf(err)
	body := fmt.Sprintf("nmhost: %s: %s\n", code, strings.ReplaceAll(mediator.MessageOf(err), "\n", " "))
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nX-Nmhost-Code: %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), code, len(body), body)
}
