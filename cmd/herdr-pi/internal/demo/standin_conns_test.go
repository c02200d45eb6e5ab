package demo

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

// ask sends one request on a new connection to the stand-in and returns its
// reply line; "" and the read error when it closed without one.
func ask(t *testing.T, socket, method string) (string, error) {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, `{"id":"1","method":"`+method+`","params":{}}`+"\n"); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

// closedUnanswered: the stand-in closed the connection without a reply
// (a reset when it had not read the request, which a timeout is not).
func closedUnanswered(reply string, err error) bool {
	return reply == "" && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE))
}

// The stand-in holds at most maxStandInConns connections at once: past
// that a connection is closed at once, unanswered, and the ones it holds
// are served as before; a place frees when one of them closes.
func TestStandInBoundsItsConnections(t *testing.T) {
	h, err := startHerdrStandIn(func(string, json.RawMessage) {})
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	held := make([]net.Conn, maxStandInConns)
	for i := range held {
		if held[i], err = net.Dial("unix", h.socket); err != nil {
			t.Fatal(err)
		}
		defer held[i].Close()
	}
	// Accepting is in order: this one is taken after every held one.
	reply, err := ask(t, h.socket, "ping")
	if !closedUnanswered(reply, err) {
		t.Fatalf("connection %d past the bound: reply %q, %v; want it closed unanswered", maxStandInConns+1, reply, err)
	}
	// A held one is still served.
	if _, err := io.WriteString(held[0], `{"id":"2","method":"ping","params":{}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	_ = held[0].SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := bufio.NewReader(held[0]).ReadString('\n'); !strings.Contains(line, `"pong"`) {
		t.Fatalf("a held connection got %q, %v", line, err)
	}
	// Its place is free once its request is answered: the next is served
	// (within the 5 s the silent ones would take to time out).
	deadline := time.Now().Add(3 * time.Second)
	for {
		reply, err := ask(t, h.socket, "ping")
		if strings.Contains(reply, `"pong"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no place freed after a connection ended: %q, %v", reply, err)
		}
	}
}

// A panic serving a request ends that connection, unanswered, not the
// demo: the stand-in serves the next one, and says what failed.
func TestAPanicInTheStandInEndsOnlyItsConnection(t *testing.T) {
	h, err := startHerdrStandIn(func(method string, _ json.RawMessage) {
		if method == "boom" {
			panic("boom")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	if reply, err := ask(t, h.socket, "boom"); !closedUnanswered(reply, err) {
		t.Fatalf("the request that panicked: reply %q, %v; want it closed unanswered", reply, err)
	}
	if reply, err := ask(t, h.socket, "ping"); !strings.Contains(reply, `"pong"`) {
		t.Fatalf("after a panic: %q, %v", reply, err)
	}
	h.close() // waits for its goroutines: the panic is told after its connection closed
	if f := h.failure(); f == nil || !strings.Contains(f.Error(), "panicked") || !strings.Contains(f.Error(), "boom") {
		t.Fatalf("failure %v, want the panic named", f)
	}
}

// A line longer than the stand-in takes (control.MaxLine, as every other
// socket reader of herdr-pi) is not read to its end: the connection is
// closed unanswered, so a sender cannot make the demo hold a line of any
// size. A line within the cap is still answered.
func TestStandInCapsTheLineItReads(t *testing.T) {
	h, err := startHerdrStandIn(func(string, json.RawMessage) {})
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	send := func(pad int) (string, error) {
		c, err := net.Dial("unix", h.socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		line := `{"id":"1","method":"ping","params":{},"pad":"` + strings.Repeat("x", pad) + `"}` + "\n"
		if _, err := io.WriteString(c, line); err != nil {
			return "", err
		}
		return bufio.NewReader(c).ReadString('\n')
	}
	if reply, err := send(1 << 10); !strings.Contains(reply, `"pong"`) {
		t.Fatalf("a line within the cap: reply %q, %v; want pong", reply, err)
	}
	if reply, err := send(control.MaxLine); strings.Contains(reply, `"pong"`) || !(reply == "" && err != nil) {
		t.Fatalf("a line of %d bytes (over the cap of %d): reply %q, %v; want the connection closed unanswered", control.MaxLine+50, control.MaxLine, reply, err)
	}
}
