package herdr

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Deadlines per attempt. Herdr has no server-side timeout for ordinary
// requests, so every call carries its own (herdr-socket-api.md §1.4).
var (
	// retryOnce is for requests that are safe to send twice: Herdr's own Pi
	// integration tries once for 500 ms and then once more for 1500 ms with
	// the identical request (§1.4), and a repeated report or release
	// carries the same seq, so a duplicate is ignored (§6.3).
	retryOnce = []time.Duration{500 * time.Millisecond, 1500 * time.Millisecond}
	// single is for requests that would act twice if repeated (creating a
	// workspace, typing input, showing a toast).
	single = []time.Duration{2 * time.Second}
	// creating is for requests that start a process in a new pane
	// (workspace.create, tab.create, pane.split): Herdr answers once the
	// pane's program is spawned, which takes longer on a loaded machine,
	// and giving up early leaves a pane open that `open` then knows
	// nothing of. A hung Herdr is still told within seconds.
	creating = []time.Duration{10 * time.Second}
)

// maxReplyBytes bounds one reply line. Herdr's replies are small objects;
// the bound only keeps a runaway peer from eating memory.
const maxReplyBytes = 8 << 20

// Client sends requests to one Herdr socket, one connection per request
// (§1.3). It holds no connection between calls and is safe for concurrent
// use.
type Client struct {
	// Socket is the path from HERDR_SOCKET_PATH.
	Socket string
	// Dial opens a connection to Socket; nil means a unix-socket dial. Tests
	// pass in-memory connections.
	Dial func(ctx context.Context, socket string) (net.Conn, error)
}

// NewClient returns a client for the Herdr socket at path.
func NewClient(path string) *Client { return &Client{Socket: path} }

var requestCounter atomic.Uint64

// newID makes a request id: a string (Herdr rejects any other JSON type,
// §2.1), unique within the process and readable in Herdr's logs.
func newID() string {
	return "herdr-pi:" + strconv.Itoa(os.Getpid()) + ":" + strconv.FormatUint(requestCounter.Add(1), 10)
}

// call sends method with params and decodes a result of type wantType into
// out (which may be nil). Each attempt in deadlines is a fresh connection
// carrying the identical request; an error reply from Herdr is final, only
// transport failures are retried. ctx bounds the whole call.
func (c *Client) call(ctx context.Context, method string, params any, wantType string, out any, deadlines []time.Duration) error {
	if params == nil {
		params = struct{}{}
	}
	id := newID()
	line, err := json.Marshal(request{ID: id, Method: method, Params: params})
	if err != nil {
		return fmt.Errorf("herdr: encode %s: %w", method, err)
	}
	line = append(line, '\n')
	for i, d := range deadlines {
		var r reply
		r, err = c.once(ctx, method, id, line, d)
		if err == nil {
			return c.decode(method, r, wantType, out)
		}
		var he *Error
		if errors.As(err, &he) || ctx.Err() != nil || i == len(deadlines)-1 {
			break
		}
	}
	return err
}

func (c *Client) decode(method string, r reply, wantType string, out any) error {
	if r.ResultType != wantType {
		return &TransportError{Kind: FailGarbage, Socket: c.Socket, Method: method,
			Err: fmt.Errorf("result type %q, want %q", r.ResultType, wantType)}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(r.Result, out); err != nil {
		return &TransportError{Kind: FailGarbage, Socket: c.Socket, Method: method, Err: fmt.Errorf("%s result: %w", wantType, err)}
	}
	return nil
}

// once is one attempt: connect, write the request line, read one reply line.
func (c *Client) once(ctx context.Context, method, id string, line []byte, d time.Duration) (reply, error) {
	actx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	fail := func(kind FailureKind, err error) (reply, error) {
		if ctx.Err() != nil {
			kind, err = FailCanceled, context.Cause(ctx)
		} else if kind == FailTimeout || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
			kind = FailTimeout
		}
		return reply{}, &TransportError{Kind: kind, Socket: c.Socket, Method: method, After: d, Err: err}
	}

	conn, err := c.dial(actx)
	if err != nil {
		return fail(c.dialKind(err), err)
	}
	defer conn.Close()
	// Cancelling the context must end a blocked read or write at once.
	stop := context.AfterFunc(actx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	if dl, ok := actx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write(line); err != nil {
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			return fail(FailClosed, err)
		}
		return fail(FailOther, err)
	}
	got, err := readLine(bufio.NewReader(conn), maxReplyBytes)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
			return fail(FailClosed, err)
		}
		if errors.Is(err, errLineTooLong) {
			return fail(FailGarbage, err)
		}
		return fail(FailOther, err)
	}
	r, err := parseReply(got)
	if err != nil {
		return fail(FailGarbage, err)
	}
	// Herdr echoes the id; only a line it could not parse comes back with
	// an empty one (§2.3).
	if r.ID != id && r.ID != "" {
		return fail(FailGarbage, fmt.Errorf("reply id %q, want %q", r.ID, id))
	}
	if r.Err != nil {
		r.Err.Method, r.Err.Socket = method, c.Socket
		return reply{}, r.Err
	}
	return r, nil
}

func (c *Client) dial(ctx context.Context) (net.Conn, error) {
	if c.Dial != nil {
		return c.Dial(ctx, c.Socket)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.Socket)
	if err != nil {
		return nil, err
	}
	if err := checkPeer(conn); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// errForeignPeer marks a socket served by another user.
var errForeignPeer = errors.New("served by another user")

// checkPeer refuses a Herdr served by another user: the agent's state, its
// session paths and notification text would go to that user's process.
// Root may serve it (root reaches everything anyway), and herdr-pi run as
// root (sudo in a person's pane) may report to that person's Herdr.
func checkPeer(conn net.Conn) error {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return nil
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("reading the peer's credentials: %w", cerr)
	}
	if me := os.Getuid(); !allowedPeer(me, int(cred.Uid)) {
		return fmt.Errorf("%w: uid %d (pid %d) serves it, not you (uid %d)", errForeignPeer, cred.Uid, cred.Pid, me)
	}
	return nil
}

// allowedPeer is the rule checkPeer applies: our own uid or root serves
// the socket, or we are root.
func allowedPeer(me, peer int) bool { return me == 0 || peer == me || peer == 0 }

func (c *Client) dialKind(err error) FailureKind {
	switch {
	case errors.Is(err, errForeignPeer):
		return FailForeign
	case errors.Is(err, fs.ErrNotExist):
		return FailNoSocket
	case errors.Is(err, syscall.ECONNREFUSED):
		// Connecting to a regular file is refused too; tell the two apart.
		if fi, serr := os.Stat(c.Socket); serr == nil && fi.Mode()&fs.ModeSocket == 0 {
			return FailNotSocket
		}
		return FailRefused
	case errors.Is(err, fs.ErrPermission):
		return FailPermission
	case errors.Is(err, syscall.ENOTSOCK), errors.Is(err, syscall.ENOTDIR):
		return FailNotSocket
	case errors.Is(err, syscall.EINVAL) && len(c.Socket) > maxSocketPath:
		// Go refuses to connect to a path that does not fit a sockaddr_un
		// ("invalid argument"), before the kernel is asked.
		return FailTooLong
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return FailTimeout
	}
	return FailOther
}

// maxSocketPath is the longest path a unix socket address holds: 108
// bytes of sun_path, one of them the terminating NUL.
const maxSocketPath = 107

var errLineTooLong = errors.New("line too long")

// readLine reads up to and excluding the next '\n', failing past limit bytes.
// A line cut off by EOF is io.ErrUnexpectedEOF: half a reply is no reply.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > limit {
			return nil, fmt.Errorf("%w (over %d bytes)", errLineTooLong, limit)
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(buf, []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(buf) > 0:
			return nil, fmt.Errorf("%w after %d bytes", io.ErrUnexpectedEOF, len(buf))
		default:
			return nil, err
		}
	}
}
