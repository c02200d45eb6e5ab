package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Client is one authenticated connection to a wrapper's control socket,
// used by `herdr-pi waiting` and `herdr-pi status`.
type Client struct {
	conn net.Conn
	r    *bufio.Reader
	next int
	// path and token are what Dial was given, for asking again (Call).
	path, token string
	// peer is the wrapper's build as its hello named it ("" for a build
	// older than the field).
	peer string
}

// PeerBuild is the wrapper's build as its hello named it: "" for a build
// from before hellos named it.
func (c *Client) PeerBuild() string { return c.peer }

// errHungUp is the wrapper closing the connection before it answered.
var errHungUp = errors.New("the wrapper closed the connection")

// ErrNoAnswer is a wrapper that took the connection and said nothing
// within the request's time: stopped, busy, its socket crowded, or not a
// wrapper at all. Callers that know it still runs say so.
var ErrNoAnswer = errors.New("the wrapper did not answer in time")

// ErrUnauthorized is returned when the wrapper refused our token.
var ErrUnauthorized = errors.New("the wrapper refused the token")

// Dial connects to the socket at path and authenticates with token. The
// context bounds the whole handshake.
func Dial(ctx context.Context, path, token string) (*Client, error) {
	return dial(ctx, path, token, false)
}

// DialHandoff is [Dial] for a client whose request will be a handoff
// ([Client.Handoff]): its hello says so, and the wrapper keeps its place
// from then on, however crowded its socket, where an idle client's may be
// given to a newcomer before it asks.
func DialHandoff(ctx context.Context, path, token string) (*Client, error) {
	return dial(ctx, path, token, true)
}

func dial(ctx context.Context, path, token string, handoff bool) (*Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	// The token is the run's: only a wrapper of our own uid is given it,
	// as the wrapper only answers its own uid. The kernel's record of who
	// listens cannot be forged; another user's socket where the path
	// points (HERDR_PI_CONTROL carried across su, say) learns nothing.
	if uc, ok := conn.(*net.UnixConn); ok {
		cred, err := PeerCred(uc)
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("reading who serves %s: %w", path, err)
		}
		if me := os.Getuid(); int(cred.Uid) != me {
			conn.Close()
			return nil, fmt.Errorf("%s is served by uid %d (pid %d), not by you (uid %d): no wrapper of yours; nothing was sent to it", path, cred.Uid, cred.Pid, me)
		}
	}
	c := &Client{conn: conn, r: bufio.NewReaderSize(conn, MaxLine), path: path, token: token}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if err := c.send(Message{Type: TypeHello, Token: token, Role: RoleClient, PID: os.Getpid(), Version: ProtocolVersion, HerdrPi: Build(), Handoff: handoff}); err != nil {
		conn.Close()
		return nil, err
	}
	m, err := c.recv()
	if err != nil {
		conn.Close()
		return nil, err
	}
	switch {
	case m.Type == TypeError && m.Error != "wrong token":
		// Every build says "wrong token" for a token; anything else is
		// a wrapper that refuses this build (a newer protocol).
		conn.Close()
		return nil, fmt.Errorf("%w: the wrapper refused this command: %s; this command is herdr-pi %s: run the command with the herdr-pi that started the wrapper, or %s",
			ErrSkew, printableLong(m.Error), Build(), restartWrapper)
	case m.Type != TypeHello || !m.OK:
		conn.Close()
		return nil, ErrUnauthorized
	case m.Version > ProtocolVersion:
		conn.Close()
		return nil, fmt.Errorf("%w: the wrapper speaks protocol version %d and this command %d; it runs %s, this command is herdr-pi %s: "+
			"run the command with the herdr-pi that started the wrapper", ErrSkew, m.Version, ProtocolVersion, buildWords(m.HerdrPi), Build())
	}
	c.peer = m.HerdrPi
	return c, nil
}

// Close ends the connection.
func (c *Client) Close() error { return c.conn.Close() }

func (c *Client) send(m Message) error {
	b, err := Encode(m)
	if err != nil {
		return err
	}
	if _, err = c.conn.Write(b); err != nil {
		switch {
		case errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNRESET):
			// It hung up before our line was taken: the same as hanging
			// up before its answer, whichever came first.
			return fmt.Errorf("%w: %w", errHungUp, err)
		case errors.Is(err, os.ErrDeadlineExceeded):
			return fmt.Errorf("%w (is it suspended?): %w", ErrNoAnswer, err)
		}
	}
	return err
}

func (c *Client) recv() (Message, error) {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			return Message{}, ErrLineTooLong
		case errors.Is(err, os.ErrDeadlineExceeded):
			// It holds the connection and says nothing: stopped (Ctrl-Z),
			// stuck, or not a wrapper at all.
			return Message{}, fmt.Errorf("%w (is it suspended?): %w", ErrNoAnswer, err)
		}
		return Message{}, fmt.Errorf("%w: %w", errHungUp, err)
	}
	return Decode(line)
}

// Call sends one request and decodes its result into out (which may be
// nil). A refusal by the wrapper comes back as an error with its text.
//
// A status or waiting request the wrapper hung up on before answering is
// asked once more, on a new connection: a wrapper whose socket is crowded
// cuts a client that has read its hello's answer and said nothing for a
// moment (see Server.silentest), before reading its request, and on a
// loaded machine a live client can be off its core that long. Both are
// safe to ask twice (a waiting start or stop sets, it does not count). A
// wrapper that is gone is not reached again: the first error is returned.
func (c *Client) Call(ctx context.Context, method string, params, out any) error {
	err := c.call(ctx, method, params, out)
	if !errors.Is(err, errHungUp) || c.path == "" || (method != MethodStatus && method != MethodWaiting) {
		return err
	}
	again, derr := Dial(ctx, c.path, c.token)
	if derr != nil {
		return err
	}
	_ = c.conn.Close()
	c.conn, c.r, c.peer = again.conn, again.r, again.peer
	return c.call(ctx, method, params, out)
}

func (c *Client) call(ctx context.Context, method string, params, out any) error {
	if dl, ok := ctx.Deadline(); ok {
		_ = c.conn.SetDeadline(dl)
	} else {
		_ = c.conn.SetDeadline(time.Time{})
	}
	c.next++
	id := strconv.Itoa(c.next)
	m := Message{Type: TypeRequest, ID: id, Method: method}
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return err
		}
		m.Params = b
	}
	if err := c.send(m); err != nil {
		return err
	}
	reply, err := c.recv()
	if err != nil {
		return err
	}
	if reply.Type == TypeError {
		// A wrapper that does not know our message type says so before
		// it hangs up.
		return c.refused(reply.Error)
	}
	if reply.Type != TypeResponse || reply.ID != id {
		return fmt.Errorf("unexpected reply %q (id %q)", reply.Type, reply.ID)
	}
	if !reply.OK {
		return c.refused(reply.Error)
	}
	if out != nil && len(reply.Result) > 0 {
		return json.Unmarshal(reply.Result, out)
	}
	return nil
}

// refused is the error for a wrapper's refusal: its text, made printable
// (another process's words, and the caller prints them), and when the
// refusal is for something this build asks that the wrapper's does not
// know, an ErrSkew naming both builds and the way out.
func (c *Client) refused(text string) error {
	text = printableLong(text)
	if !strings.HasPrefix(text, unknownMethod) && !strings.HasPrefix(text, "unknown message type ") {
		return errors.New(text)
	}
	if c.peer != "" && strings.Contains(text, "restart") {
		// A wrapper of this build or newer says the rest itself.
		return fmt.Errorf("%w: %s", ErrSkew, text)
	}
	return skewError(text, c.peer)
}

// Wait sends one waiting request.
func (c *Client) Wait(ctx context.Context, w WaitRequest) error {
	return c.Call(ctx, MethodWaiting, w, nil)
}

// Status asks for the wrapper's status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	err := c.Call(ctx, MethodStatus, nil, &st)
	return st, err
}
