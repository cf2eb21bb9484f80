package motoserver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
)

// A read on a traced connection closed before says so, with the stack
// that closed it; a read on an open one says nothing.
func TestTracedConnTellsWhoClosedIt(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("x"))
		}
	}()
	var out bytes.Buffer
	traceOut = &out
	t.Cleanup(func() { traceOut = os.Stderr })
	tr := TracedTransport(&http.Transport{})
	c, err := tr.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	if _, err := c.Read(buf); err != nil || out.Len() != 0 {
		t.Fatalf("a read on an open connection: %v, told %q", err, out.String())
	}
	closeFromHere(c)
	if _, err := c.Read(buf); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("a read on a closed connection: %v, want net.ErrClosed", err)
	}
	if got := out.String(); !strings.Contains(got, "was closed") || !strings.Contains(got, "closeFromHere") {
		t.Fatalf("told %q, want the stack of closeFromHere", got)
	}
}

func closeFromHere(c net.Conn) { _ = c.Close() }

// The transport letting an idle connection go is not told (its reader's
// read after that loses no answer); a connection closed elsewhere is.
func TestTracedConnIdleClose(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	tr := TracedTransport(&http.Transport{})
	var (
		mu    sync.Mutex
		conns []*tracedConn
	)
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if tc, ok := c.(*tracedConn); ok {
			mu.Lock()
			conns = append(conns, tc)
			mu.Unlock()
		}
		return c, err
	}
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	tr.CloseIdleConnections()
	mu.Lock()
	defer mu.Unlock()
	if len(conns) != 1 {
		t.Fatalf("%d connections dialled, want 1", len(conns))
	}
	conns[0].mu.Lock()
	by := conns[0].closedBy
	conns[0].mu.Unlock()
	if !idleClose(by) {
		t.Fatalf("CloseIdleConnections's close not told apart:\n%s", by)
	}
	var other tracedConn
	other.Conn, _ = net.Pipe()
	closeFromHere(&other)
	if idleClose(other.closedBy) {
		t.Fatalf("a close from elsewhere taken for an idle one:\n%s", other.closedBy)
	}
}
