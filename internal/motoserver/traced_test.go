package motoserver

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
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
