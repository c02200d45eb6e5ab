package control

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A socket that takes the connection and never answers (a wrapper stopped
// with SIGSTOP, a stranger's listener) is told as no answer in time, not as
// a connection the wrapper closed; one that hangs up is told as closed.
func TestDialSaysWhetherTheWrapperHungUpOrNeverAnswered(t *testing.T) {
	path := filepath.Join(shortDir(t), "c.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	hangUp := make(chan bool, 2)
	done := make(chan struct{})
	go func() { // owned by the test, which waits for it
		defer close(done)
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if <-hangUp {
				c.Close()
				continue
			}
			held = append(held, c)
		}
	}()
	defer func() { ln.Close(); <-done }()

	hangUp <- false
	// The wait is the answer's, not the connect's: long enough that a
	// loaded machine still connects within it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_, err = Dial(ctx, path, "t")
	cancel()
	if err == nil || strings.Contains(err.Error(), "closed the connection") || !strings.Contains(err.Error(), "did not answer") {
		t.Errorf("a silent socket: %v", err)
	}
	hangUp <- true
	_, err = Dial(context.Background(), path, "t")
	if err == nil || !strings.Contains(err.Error(), "closed the connection") {
		t.Errorf("a socket that hangs up: %v", err)
	}
}

// A wrapper that hangs up before the hello is written is the same news as
// one that hangs up before answering: the write's broken pipe says so.
func TestSendToAWrapperThatHungUpSaysSo(t *testing.T) {
	path := filepath.Join(shortDir(t), "c.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closed := make(chan struct{})
	go func() { // owned by the test, which waits for closed
		defer close(closed)
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	<-closed
	c := &Client{conn: conn}
	if err := c.send(Message{Type: TypeHello, Token: "t"}); err == nil || !strings.Contains(err.Error(), "the wrapper closed the connection") {
		t.Fatalf("send to a wrapper that hung up: %v", err)
	}
}
