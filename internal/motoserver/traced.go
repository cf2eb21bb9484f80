package motoserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/yp/paysvc/shared/sdkbody"
)

// HTTPClient is the HTTP client of the tests' AWS clients: t's
// connections traced (TracedTransport), request bodies handed on as plain
// readers as the service's own clients do (sdkbody), timeout bounding a
// call (0: none).
func HTTPClient(t *http.Transport, timeout time.Duration) aws.HTTPClient {
	return sdkbody.Client(&http.Client{Transport: TracedTransport(t), Timeout: timeout})
}

// TracedTransport returns t dialing connections that remember where they
// were closed from: a read on one already closed says so on stderr with
// that stack. Diagnostics for the SDK's "deserialization failed … use of
// closed network connection" on an answer moto sent whole (aws-sdk-go-v2
// #1825): a failing test's output then names what closed the connection
// under the answer being read.
func TracedTransport(t *http.Transport) *http.Transport {
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &tracedConn{Conn: c}, nil
	}
	return t
}

// traceOut is where a read on a closed connection is told (a test's
// buffer in tests that read no connection on another goroutine).
var traceOut io.Writer = os.Stderr

// tracedConn is a connection that keeps the stack of its first Close.
type tracedConn struct {
	net.Conn
	mu       sync.Mutex
	closedBy []byte
}

func (c *tracedConn) Close() error {
	c.mu.Lock()
	if c.closedBy == nil {
		c.closedBy = debug.Stack()
	}
	c.mu.Unlock()
	return c.Conn.Close()
}

func (c *tracedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if errors.Is(err, net.ErrClosed) {
		c.mu.Lock()
		by := c.closedBy
		c.mu.Unlock()
		if idleClose(by) {
			return n, err // the transport's idle reader, after an idle connection was let go: no answer lost
		}
		fmt.Fprintf(traceOut, "motoserver: a read on a connection to %s that was closed (%v) by:\n%s\n", c.RemoteAddr(), err, by)
	}
	return n, err
}

// idleClose reports whether stack is net/http letting an idle connection
// go (its idle timeout, CloseIdleConnections).
func idleClose(stack []byte) bool {
	return bytes.Contains(stack, []byte("closeConnIfStillIdle")) || bytes.Contains(stack, []byte("CloseIdleConnections"))
}
