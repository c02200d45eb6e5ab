package pty

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Options says what to run and where its terminal is.
type Options struct {
	Argv []string
	Env  []string
	Dir  string

	// Stdin and Stdout are the caller's terminal (or pipes and files). Stdin
	// is put into raw mode only when it is a terminal.
	Stdin  *os.File
	Stdout *os.File
	// SizeFrom are extra files asked for the window size when neither Stdin
	// nor Stdout is a terminal (typically stderr). May be empty.
	SizeFrom []*os.File

	// Tap, when set, receives every output chunk after it reached Stdout
	// (read into the tap's own memory: no copy), and every resize. The
	// copy loop never waits for its reader.
	Tap *Tap

	// Tail, when set, holds the last Tail.Size bytes the child wrote once
	// Run returns: what an agent printed as it exited.
	Tail *Tail

	// Inject, when set, carries bytes other parts want on the caller's
	// terminal; the copy loop writes them between output chunks.
	Inject *Injector

	// Started is called once the child runs, with its pid.
	Started func(pid int)
	// Terminal, when set, is called once the pty is open and before the
	// child starts, with the device number of the child's side of it
	// (the st_rdev of its /dev/pts/N): a process that has that device as
	// its stdin, stdout or controlling terminal runs on the child's
	// screen, wherever it sits in the process tree.
	Terminal func(dev uint64)
	// Suspending is called on the copy loop once the child stopped by job
	// control (Ctrl-Z), with the caller's terminal mode restored, just
	// before this process stops too; Resumed once it runs again (fg). Both
	// hold up the loop, and the shell's prompt, while they run. Neither is
	// called when this process cannot stop (its process group is
	// orphaned: no shell with job control started it), as the child then
	// goes on at once.
	Suspending func()
	Resumed    func()

	// Exited is called once the child's exit is seen, on the copy loop,
	// before the output it left is drained and Run returns — also while
	// the terminal takes no output, which can hold the drain for as long
	// as it does. When the loop fails instead, it is called once the
	// child it ends is reaped. It must return at once. Not called for a
	// child that never ran.
	Exited func()

	// Logf receives diagnostics; it must not write to the terminal.
	Logf func(format string, args ...any)

	// KillGrace is how long a child may take to exit after its terminal hung
	// up or the context was cancelled, before it is killed. Default 2s.
	KillGrace time.Duration

	// Signals, when set, replaces Run's own subscription to [Signals]: for
	// a caller that holds them longer than Run does (wrap, whose start-up
	// and way out a signal must not cut short), and for tests that run
	// several wrappers in one process.
	Signals <-chan os.Signal

	// Seams for this package's tests: ppoll stands in for unix.Ppoll in
	// the copy loop, stopSelf for stopping this process on job control,
	// orphaned for groupOrphaned, injectWait and injectCap for the bounds on waiting for a clean
	// boundary.
	ppoll      func(fds []unix.PollFd, timeout *unix.Timespec, sigmask *unix.Sigset_t) (int, error)
	stopSelf   func()
	orphaned   func() bool
	injectWait time.Duration
	injectCap  time.Duration
}

// forwarded are the signals sent on to the child instead of acting on us.
var forwarded = []os.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGQUIT, unix.SIGHUP}

// Signals are the signals Run acts on: those it forwards, and SIGWINCH. A
// caller giving Run its own channel ([Options.Signals]) subscribes it to
// these with [Notify].
var Signals = append(slices.Clip(forwarded), unix.SIGWINCH)

// Notify subscribes c to [Signals], leaving out a forwarded one this
// process was started with ignored (nohup, `trap "" INT`, a script's &):
// Go keeps an inherited ignore of SIGHUP and SIGINT only until a program
// asks for the signal, and the child would then start with it caught, not
// ignored as under the bare command. Left ignored, it stays so through the
// leader for the child; nothing arrives for it to forward. (Go's runtime
// takes the others over at start whatever their disposition: an ignored
// SIGTERM or SIGQUIT is lost before any code of ours runs.)
func Notify(c chan<- os.Signal) {
	var sigs []os.Signal
	for _, s := range Signals {
		if s == unix.SIGWINCH || !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	signal.Notify(c, sigs...)
}

// Run starts o.Argv under a new pty and copies between it and the caller's
// terminal until the child exits. It returns nil for exit status 0, an
// [ExitStatus] for any other status, a [*StartError] when the command could
// not start, or another error when the wrapper itself failed (the child is
// then killed).
//
// The caller's terminal mode is restored on every return path, panics
// included. Run owns every goroutine it starts and waits for them.
func Run(ctx context.Context, o Options) (err error) {
	if len(o.Argv) == 0 {
		return &StartError{Command: `""`, Code: 127, Reason: "no command given"}
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.KillGrace <= 0 {
		o.KillGrace = 2 * time.Second
	}
	path, err := resolve(o.Argv[0], o.Env)
	if err != nil {
		return err
	}

	inFd, outFd := int(o.Stdin.Fd()), int(o.Stdout.Fd())
	inTTY := IsTerminal(inFd)
	sizeFds := []int{inFd, outFd}
	for _, f := range o.SizeFrom {
		sizeFds = append(sizeFds, int(f.Fd()))
	}
	size, ok := sizeOf(sizeFds...)
	if !ok {
		size = fallbackSize(o.Env)
	}
	if o.Tap != nil {
		// The reader learns the starting size in band, before any output.
		o.Tap.Resize(size)
	}

	master, slave, err := openPty()
	if err != nil {
		return fmt.Errorf("open pty: %w", err)
	}
	masterClosed := false
	closeMaster := func() {
		if !masterClosed {
			masterClosed = true
			_ = unix.Close(master)
		}
	}
	defer closeMaster()
	if err := setWinsize(int(slave.Fd()), size); err != nil {
		_ = slave.Close()
		return fmt.Errorf("set pty size: %w", err)
	}
	if o.Terminal != nil {
		var st unix.Stat_t
		if err := unix.Fstat(int(slave.Fd()), &st); err == nil {
			o.Terminal(st.Rdev)
		} else {
			o.Logf("pty: cannot read the device of %s: %v", slave.Name(), err)
		}
	}
	if inTTY {
		// The child's terminal starts as the person's is (before raw
		// mode below): their stty settings hold for it as for the bare
		// command, where a new pty would have the kernel's defaults.
		if err := copyMode(inFd, int(slave.Fd())); err != nil {
			o.Logf("pty: cannot give the child the terminal's mode: %v", err)
		}
	} else if err := disableEcho(slave); err != nil {
		o.Logf("pty: cannot turn echo off: %v", err)
	}

	// The child runs under a session leader (leader.go) so that job control
	// works; the leader reports the child's pid or why it could not start.
	reportR, reportW, err := os.Pipe()
	if err != nil {
		_ = slave.Close()
		return fmt.Errorf("pty: start report pipe: %w", err)
	}
	cmd := leaderCommand(path, o.Argv, reportW)
	cmd.Env = o.Env
	cmd.Dir = o.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	startErr := cmd.Start()
	_ = slave.Close()
	_ = reportW.Close()
	if startErr != nil {
		_ = reportR.Close()
		return fmt.Errorf("pty: start the session leader (%s): %w", selfExe, startErr)
	}
	leader := cmd.Process.Pid
	child, err := readLeaderReport(reportR, o.Argv[0])
	_ = reportR.Close()
	if err != nil {
		// The leader has nothing to lead; it is on its way out already
		// when the command could not start.
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		return err
	}
	if o.Started != nil {
		o.Started(child)
	}

	// From here the child runs: every path must reap it.
	out, why := openOut(outFd)
	if why != "" {
		o.Logf("pty: %s", why)
	}
	defer out.close()
	// The keyboard is read through a private, non-blocking description
	// of the terminal too, with raw calls (park.go).
	keys, why := openIn(inFd)
	if why != "" {
		o.Logf("pty: %s", why)
	}
	if keys != inFd {
		defer unix.Close(keys)
	}
	l, err := newLoop(o, master, keys, keys != inFd, out, inTTY, sizeFds, leader, child)
	if err != nil {
		killAll(leader, child)
		_, _ = cmd.Process.Wait()
		return err
	}
	defer l.close()

	// Raw mode is entered and left only on this goroutine (Run and its copy
	// loop).
	var saved *unix.Termios
	raw := func() {
		if !inTTY || saved != nil {
			return
		}
		s, rerr := rawMode(inFd)
		if rerr != nil {
			o.Logf("pty: raw mode: %v", rerr)
			return
		}
		saved = s
	}
	restore := func() {
		if saved == nil {
			return
		}
		if err := restoreMode(inFd, saved); err != nil {
			o.Logf("pty: restore terminal: %v", err)
		}
		saved = nil
	}
	raw()
	defer restore()

	if o.Inject != nil {
		o.Inject.setWake(func() { l.post(event{kind: evInject}) })
		defer o.Inject.setWake(nil)
	}
	l.closeMaster = closeMaster
	l.onStop, l.onCont = restore, raw

	var wg sync.WaitGroup
	defer wg.Wait()
	stopForwarding := make(chan struct{})
	defer close(stopForwarding)

	// Waiter: the only place the leader is reaped. Owned by Run; ends when
	// the leader has exited (with the child's status).
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(l.exited)
		defer l.recoverInto("waiter")
		for {
			var ws unix.WaitStatus
			_, err := unix.Wait4(leader, &ws, unix.WUNTRACED, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				l.post(event{kind: evExit, status: 1, err: fmt.Errorf("wait: %w", err)})
				return
			}
			if ws.Stopped() {
				l.post(event{kind: evStopped})
				continue
			}
			l.post(event{kind: evExit, status: statusOf(syscall.WaitStatus(ws))})
			return
		}
	}()
	defer func() { _ = cmd.Process.Release() }()

	// Signal forwarder: owned by Run; ends when Run returns.
	sigs := o.Signals
	if sigs == nil {
		ch := make(chan os.Signal, 8)
		Notify(ch)
		defer signal.Stop(ch)
		sigs = ch
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer l.recoverInto("signals")
		for {
			select {
			case s := <-sigs:
				l.post(event{kind: evSignal, sig: s})
			case <-ctx.Done():
				l.post(event{kind: evCancel})
				<-stopForwarding
				return
			case <-stopForwarding:
				return
			}
		}
	}()

	defer func() {
		if r := recover(); r != nil {
			// The copy loop itself failed: give the terminal back and kill
			// the child rather than leave it on a terminal nobody serves.
			restore()
			l.killAll()
			err = fmt.Errorf("pty: copy loop panic: %v\n%s", r, debug.Stack())
			l.reaped(5 * time.Second)
		}
	}()
	status, loopErr := l.run()
	if loopErr != nil {
		return loopErr
	}
	if status != 0 {
		return ExitStatus(status)
	}
	return nil
}

type eventKind int

const (
	evSignal eventKind = iota
	evExit
	evStopped
	evCancel
	evPanic
	evInject
)

type event struct {
	kind   eventKind
	sig    os.Signal
	status int
	err    error
}

// loop is the copy loop: one goroutine polling the pty master, the
// caller's stdin and an eventfd that other goroutines use to hand it
// signals and the child's exit. Output is read and written with raw system
// calls on non-blocking descriptors (rawio.go): measured against two
// io.Copy goroutines, and then against ordinary syscalls, this avoids most
// scheduler wake-ups (go-toolkit.md §4.x). The goroutine is not locked to
// its thread (see run).
type loop struct {
	o         Options
	mfd, inFd int  // mfd: the pty master, raw and non-blocking
	inOwn     bool // inFd is our private description of the terminal: raw reads
	out       outHandle
	inTTY     bool
	sizeFds   []int
	pid       int // the session leader, our child
	child     int // the command, the leader's child
	wake      *waker
	park      *parker       // the long waits, when the runtime's poller can have them (park.go)
	exited    chan struct{} // closed once the leader was reaped

	mu     sync.Mutex
	events []event

	ppoll          func([]unix.PollFd, *unix.Timespec, *unix.Sigset_t) (int, error)
	stopSelf       func()
	orphaned       func() bool
	injectWait     time.Duration
	injectCap      time.Duration
	closeMaster    func()
	onStop, onCont func()
	// exitTold: Exited was called (tellExit).
	exitTold bool
}

func newLoop(o Options, master, inFd int, inOwn bool, out outHandle, inTTY bool, sizeFds []int, pid, child int) (*loop, error) {
	w, err := newWaker()
	if err != nil {
		return nil, err
	}
	l := &loop{o: o, mfd: master, inFd: inFd, inOwn: inOwn, out: out, inTTY: inTTY,
		sizeFds: sizeFds, pid: pid, child: child, wake: w, exited: make(chan struct{}),
		ppoll: o.ppoll, stopSelf: o.stopSelf, orphaned: o.orphaned, injectWait: o.injectWait, injectCap: o.injectCap}
	if l.injectWait == 0 {
		l.injectWait = injectWait
	}
	if l.injectCap == 0 {
		l.injectCap = injectCap
	}
	if p, err := newParker(); err == nil {
		l.park = p
		l.out.wait = p.ppoll
	} else {
		o.Logf("pty: long waits in ordinary ppolls: %v", err)
	}
	if l.ppoll == nil {
		l.ppoll = unix.Ppoll
		if l.park != nil {
			l.ppoll = l.park.ppoll
		}
	}
	if l.stopSelf == nil {
		l.stopSelf = stopSelf
	}
	if l.orphaned == nil {
		l.orphaned = groupOrphaned
	}
	return l, nil
}

func (l *loop) close() {
	l.wake.close()
	if l.park != nil {
		l.park.close()
	}
}

// post hands e to the loop. Safe from any goroutine, even after close
// (an Injector's writer may still hold the wake-up of a finished Run).
func (l *loop) post(e event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
	l.wake.wake()
}

func (l *loop) recoverInto(who string) {
	if r := recover(); r != nil {
		l.post(event{kind: evPanic, err: fmt.Errorf("pty: %s panic: %v\n%s", who, r, debug.Stack())})
	}
}

func (l *loop) takeEvents() []event {
	l.wake.clear()
	l.mu.Lock()
	ev := l.events
	l.events = nil
	l.mu.Unlock()
	return ev
}

// waitExit waits, at most d, until the waiter has reaped the leader, and
// reports whether it has.
func (l *loop) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-l.exited:
		return true
	case <-t.C:
		return false
	}
}

// tellExit calls Exited, once: as soon as the loop sees the child's exit
// (also while the terminal is full, when the exit itself waits in deferred:
// a terminal that takes no output may hold the drain for as long as it
// likes, and the caller must not take the child for alive meanwhile), or
// once a failed loop has reaped the child it ended (reaped). Only the copy
// loop's goroutine calls it.
func (l *loop) tellExit() {
	if !l.exitTold && l.o.Exited != nil {
		l.exitTold = true
		l.o.Exited()
	}
}

// reaped waits, at most d, for the waiter to reap the leader, as
// waitExit, and tells the exit (tellExit) when it has.
func (l *loop) reaped(d time.Duration) bool {
	if !l.waitExit(d) {
		return false
	}
	l.tellExit()
	return true
}

// killAll kills the command's process group and the leader.
func (l *loop) killAll() { killAll(l.pid, l.child) }

// killAll SIGKILLs the command's process group (the leader made it its
// own) and the leader. The group's id could only name another group if the
// leader had reaped the command and the group emptied; the leader exits
// right after reaping, and the pid space would have to wrap around in
// between.
func killAll(leader, child int) {
	_ = unix.Kill(-child, unix.SIGKILL)
	_ = unix.Kill(-leader, unix.SIGKILL)
	_ = unix.Kill(leader, unix.SIGKILL)
}

// end ends a child the wrapper can no longer serve (the copy loop failed):
// the caller's terminal gets its mode back at once, then the child is hung
// up as if its terminal had gone, and killed if it is still there after
// KillGrace. It returns once the leader was reaped, or a last bounded wait
// ran out.
func (l *loop) end(why error) {
	l.onStop()
	l.o.Logf("pty: %v; hanging up the child", why)
	_ = unix.Kill(l.pid, unix.SIGHUP) // the leader passes it on
	l.closeMaster()
	if l.reaped(l.o.KillGrace) {
		return
	}
	l.o.Logf("pty: child %d did not exit within %v; killing it", l.child, l.o.KillGrace)
	l.killAll()
	l.reaped(5 * time.Second)
}

const (
	// injectWait is how long the child's output may stay quiet inside a
	// sequence or a character before a waiting injection is written
	// anyway; injectCap bounds the whole wait, for output that keeps
	// coming inside a sequence that never ends.
	injectWait = 50 * time.Millisecond
	injectCap  = 2 * time.Second
	readChunk  = 64 << 10
	inputLimit = 64 << 10
	burstReads = 16
	// A read of the master that brought fillFrom bytes or more, but less
	// than the line discipline holds (N_TTY_BUF_SIZE, 4 KiB), is topped
	// up by up to fillReads more reads before it is written: see fillRead.
	fillFrom    = 1 << 10
	fillTo      = 4 << 10
	fillReads   = 2
	drainBursts = 4 // at most 4 MiB of output drained before a suspend
	drainQuiet  = 100 * time.Millisecond
	drainLimit  = 2 * time.Second
	pollForever = -1
)

// run is the copy loop. It returns the child's status once the child has
// exited and its last output has been copied.
func (l *loop) run() (int, error) {
	// The loop's goroutine is not locked to its thread. The raw calls keep
	// its P, so the scheduler sees it running for a whole flood, and sysmon
	// preempts it every 10 ms. Locked, each preemption handed the P to
	// another thread and back (a wake-up and a spinning thread each way):
	// unlocked, the same thread takes it up again from the run queue.
	// Measured on a 2-CPU Xeon (KVM), 200 MiB, Python reader, interleaved
	// rounds: wall 1.102 → 1.038 of script's (cut escapes, 16 rounds) and
	// 0.973 → 0.946 (base64 lines, 12), tree CPU 220 and 100 ms less, futex
	// calls halved. On the AMD machine before, locking had measured better
	// (BENCHMARKS.md, "How the copy loop is built").
	// Output is read straight into the tap's memory when there is a tap,
	// else into one buffer. The tap also keeps what a Tail wants; without
	// one, a tap nobody reads keeps it.
	tap := l.o.Tap
	if tap == nil && l.o.Tail != nil {
		tap = NewTap(2 * tapChunk)
	}
	var out []byte
	if tap == nil {
		out = make([]byte, readChunk)
	}
	if l.o.Tail != nil {
		defer func() { l.o.Tail.data = tap.Last(l.o.Tail.Size) }()
	}
	var in []byte        // input read from stdin, not yet accepted by the master
	lastIn := byte('\n') // last byte the child was given
	inBuf := make([]byte, 4096)

	masterOpen := true // still reading output
	stdinOpen := true
	termLost := false // the caller's terminal is gone (hangup)
	pipeGone := false // …because the reader of our stdout pipe went away
	childDone := false
	status := 0
	var drainStart, lastOut time.Time
	var killAt time.Time // when set, SIGKILL the child's group at this time
	bnd := NewBoundary()
	// pollSet is reused by every turn of the loop: no garbage per poll.
	pollSet := make([]unix.PollFd, 0, 3)
	var injectBy time.Time    // when set, write pending injections by then
	var injectSince time.Time // when pending injections began to wait

	hangup := func(why string) {
		if termLost {
			return
		}
		termLost = true
		stdinOpen = false
		l.o.Logf("pty: terminal gone (%s); hanging up the child", why)
		_ = unix.Kill(l.pid, unix.SIGHUP)
		if !pipeGone {
			masterOpen = false
			l.closeMaster()
		}
		// For a closed pipe the master stays open, its output read and
		// let go, until the child ends: a child writing when the
		// master closed would get EIO before the SIGHUP (the leader
		// passes it on) and exit 1 with a write error, where the bare
		// command in the pipeline dies of SIGPIPE. Killed at killAt
		// when it ignores the hangup.
		if killAt.IsZero() {
			killAt = time.Now().Add(l.o.KillGrace)
		}
	}

	// readInput reads the keyboard and feeds the child; false when the
	// terminal is gone. Set below, with what it needs.
	var readInput func() bool
	// inputFd is stdin while the loop takes input, else -1.
	inputFd := func() int {
		if stdinOpen && len(in) < inputLimit && !childDone {
			return l.inFd
		}
		return -1
	}

	// While the terminal is full, the keyboard is read and signals are
	// passed on (whileFull). servedInput: the keyboard was read so since
	// the loop's last poll, whose word on stdin is stale then (stdin
	// blocks: a read on that word could wait for the next key). Events
	// other than signals wait in deferred for the loop.
	servedInput := false
	var deferred []event
	var onSignal func(os.Signal)
	fullSet := make([]unix.PollFd, 0, 3) // reused by every wait, as pollSet
	watch := func(out unix.PollFd) []unix.PollFd {
		fds := append(fullSet[:0], out, unix.PollFd{Fd: int32(l.wake.fd), Events: unix.POLLIN})
		if fd := inputFd(); fd >= 0 {
			fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
		}
		return fds
	}
	whileFull := func(fds []unix.PollFd) bool {
		if fds[0].Revents != 0 {
			for _, e := range l.takeEvents() {
				switch e.kind {
				case evSignal:
					onSignal(e.sig)
				case evExit:
					l.tellExit()
					deferred = append(deferred, e)
				default:
					deferred = append(deferred, e)
				}
			}
		}
		if len(fds) > 1 && fds[1].Revents != 0 && !termLost {
			servedInput = true
			readInput()
		}
		return !termLost
	}
	writeOut := func(p []byte) {
		if termLost {
			return
		}
		if err := l.out.writeServing(p, watch, whileFull); err != nil && !termLost {
			pipeGone = errors.Is(err, unix.EPIPE)
			hangup("stdout: " + err.Error())
		}
	}

	// readMaster copies what the master has, up to a burst, and reports
	// whether the master is finished (EIO: every slave fd is closed) or
	// had nothing more to read.
	readMaster := func() (eof, empty bool) {
		for i := 0; i < burstReads; i++ {
			if !masterOpen {
				// A hangup while the last chunk was written closed it.
				return true, true
			}
			buf := out
			if tap != nil {
				buf = tap.Space()
			}
			n, err := rawRead(l.mfd, buf) // non-blocking; see rawio.go
			if n >= fillFrom && n < fillTo {
				n = fillRead(l.mfd, buf, n)
			}
			if n > 0 {
				writeOut(buf[:n])
				if tap != nil {
					tap.Commit(n)
				}
				if l.o.Inject != nil {
					bnd.Observe(buf[:n])
				}
				if childDone {
					// Only the drain after the child's exit asks when
					// output last came: no clock read per chunk before.
					lastOut = time.Now()
				}
				continue
			}
			if err == nil || errors.Is(err, unix.EIO) {
				return true, true
			}
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if errors.Is(err, unix.EAGAIN) {
				return false, true
			}
			l.o.Logf("pty: read master: %v", err)
			return true, true
		}
		return false, false
	}

	// known is the terminal's size the child's pty was last given.
	var known Size
	if ws, err := unix.IoctlGetWinsize(l.mfd, unix.TIOCGWINSZ); err == nil {
		known = Size{Rows: ws.Row, Cols: ws.Col}
	}
	// resize gives the child's pty the terminal's size: always on a
	// SIGWINCH or after a stop, only when it changed otherwise (a size the
	// child set itself, stty cols 40, stays until the terminal's changes).
	resize := func(always bool) {
		s, ok := sizeOf(l.sizeFds...)
		if !ok || !masterOpen || (!always && s == known) {
			return
		}
		if err := setWinsize(l.mfd, s); err != nil {
			l.o.Logf("pty: resize: %v", err)
			return
		}
		known = s
		if l.o.Tap != nil {
			l.o.Tap.Resize(s)
		}
	}

	// waitQuiet puts a waiting injection off for another quiet wait from
	// now, within injectCap of when it began to wait.
	waitQuiet := func(now time.Time) {
		injectBy = now.Add(l.injectWait)
		if limit := injectSince.Add(l.injectCap); limit.Before(injectBy) {
			injectBy = limit
		}
	}

	// flushInject writes what others queued for the terminal, at a clean
	// boundary of the child's output, or regardless when forced. Output
	// that keeps coming inside a sequence puts the forced write off
	// (output is true when the call follows output): a long sequence
	// still on its way (an OSC 52 clipboard write, a sixel image, either
	// through a slow terminal) is not cut in two, but one the child left
	// unfinished and went quiet on does not hold the bytes back for long,
	// and one that never ends, not beyond injectCap.
	flushInject := func(force, output bool) {
		if l.o.Inject == nil || !l.o.Inject.hasPending() {
			injectBy, injectSince = time.Time{}, time.Time{}
			return
		}
		if !bnd.clean && !force {
			if injectBy.IsZero() || output {
				now := time.Now()
				if injectSince.IsZero() {
					injectSince = now
				}
				waitQuiet(now)
			}
			return
		}
		for _, p := range l.o.Inject.take() {
			writeOut(p)
		}
		injectBy, injectSince = time.Time{}, time.Time{}
	}

	sendEOF := func() {
		// Pass EOF on the way a terminal would: the VEOF character, twice
		// when a partial line is pending so the first one flushes it.
		eof := byte(4)
		if t, err := unix.IoctlGetTermios(l.mfd, unix.TCGETS); err == nil && t.Cc[unix.VEOF] != 0 {
			eof = t.Cc[unix.VEOF]
		}
		pendingLast := lastIn
		if len(in) > 0 {
			pendingLast = in[len(in)-1]
		}
		if pendingLast != '\n' {
			in = append(in, eof)
		}
		in = append(in, eof)
	}

	// feedMaster gives the child what it can take of the input.
	feedMaster := func() {
		if !masterOpen || len(in) == 0 {
			return
		}
		n, err := rawWrite(l.mfd, in) // non-blocking; see rawio.go
		if n > 0 {
			lastIn = in[n-1]
			in = append(in[:0], in[n:]...)
		}
		if err != nil && !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
			l.o.Logf("pty: write master: %v", err)
			in = in[:0]
		}
	}
	readInput = func() bool {
		var n int
		var err error
		if l.inOwn {
			n, err = rawRead(l.inFd, inBuf[:min(len(inBuf), inputLimit-len(in))])
		} else {
			n, err = unix.Read(l.inFd, inBuf[:min(len(inBuf), inputLimit-len(in))])
		}
		switch {
		case n > 0:
			// A resize comes before the keys typed after it, as on
			// the terminal itself: our SIGWINCH, coming through Go's
			// signal machinery, is often later than the keys. One
			// ioctl per read of input, not per byte of output.
			if l.inTTY {
				resize(false)
			}
			in = append(in, inBuf[:n]...)
		case errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN):
		case l.inTTY:
			hangup("stdin closed")
			return false
		default:
			if err != nil {
				l.o.Logf("pty: read stdin: %v", err)
			}
			stdinOpen = false
			sendEOF()
		}
		feedMaster()
		return true
	}

	onSignal = func(sig os.Signal) {
		switch sig {
		case unix.SIGWINCH:
			resize(true)
		case unix.SIGHUP:
			hangup("SIGHUP")
		default:
			if !childDone {
				_ = unix.Kill(l.pid, sig.(unix.Signal))
			}
		}
	}

	for {
		if childDone {
			now := time.Now()
			if !masterOpen || now.Sub(drainStart) > drainLimit || now.Sub(lastOut) > drainQuiet {
				flushInject(true, false)
				if l.o.Tap != nil {
					l.o.Tap.Close()
				}
				if pipeGone && (status == 128+int(unix.SIGHUP) || status == 128+int(unix.SIGKILL)) {
					// The child died of the hangup we gave it for
					// the closed pipe (`wrap -- cmd | head`): the
					// pipeline's status is the one the shell gives a
					// command the closed pipe killed, as for bare
					// `cmd | head` and for script; 129 would read as
					// the terminal hanging up. A status the child
					// chose itself stays.
					status = 128 + int(unix.SIGPIPE)
				}
				return status, nil
			}
		}

		fds := append(pollSet[:0], unix.PollFd{Fd: int32(l.wake.fd), Events: unix.POLLIN})
		mi, ii := -1, -1
		if masterOpen {
			ev := int16(unix.POLLIN)
			if len(in) > 0 {
				ev |= unix.POLLOUT
			}
			mi = len(fds)
			fds = append(fds, unix.PollFd{Fd: int32(l.mfd), Events: ev})
		}
		if stdinOpen && len(in) < inputLimit && !childDone {
			ii = len(fds)
			fds = append(fds, unix.PollFd{Fd: int32(l.inFd), Events: unix.POLLIN})
		}

		var wait time.Duration = pollForever
		if childDone {
			wait = drainQuiet
		}
		if len(deferred) > 0 {
			wait = 0 // events taken while the terminal was full
		}
		for _, at := range []time.Time{killAt, injectBy} {
			if !at.IsZero() {
				if d := time.Until(at); wait < 0 || d < wait {
					wait = max(d, 0)
				}
			}
		}
		_, err := waitFor(fds, wait, l.ppoll)
		servedInput = false
		if err != nil && !errors.Is(err, unix.EINTR) {
			err = fmt.Errorf("pty: poll: %w", err)
			l.end(err)
			return 1, err
		}

		if !killAt.IsZero() && !time.Now().Before(killAt) && !childDone {
			l.o.Logf("pty: child %d did not exit within %v; killing it", l.child, l.o.KillGrace)
			l.killAll()
			killAt = time.Time{}
		}

		if fds[0].Revents != 0 || len(deferred) > 0 {
			events := deferred
			deferred = nil
			if fds[0].Revents != 0 {
				events = append(events, l.takeEvents()...)
			}
			for _, e := range events {
				switch e.kind {
				case evExit:
					l.tellExit()
					childDone = true
					status = e.status
					drainStart = time.Now()
					lastOut = drainStart
					if e.err != nil {
						l.o.Logf("pty: %v", e.err)
					}
				case evSignal:
					onSignal(e.sig)
				case evCancel:
					if !childDone {
						_ = unix.Kill(l.pid, unix.SIGTERM)
						if killAt.IsZero() {
							killAt = time.Now().Add(l.o.KillGrace)
						}
					}
				case evStopped:
					// The child stopped itself (Ctrl-Z): what it wrote on
					// its way (its terminal modes undone) reaches the
					// screen before we hand the terminal to the shell.
					for i := 0; i < drainBursts && masterOpen; i++ {
						eof, empty := readMaster()
						if eof {
							masterOpen = false
						}
						if empty {
							break
						}
					}
					l.suspend(termLost)
					resize(true)
				case evPanic:
					l.onStop()
					l.killAll()
					l.reaped(5 * time.Second)
					return 1, e.err
				case evInject:
					// What the child wrote before the injection was
					// queued goes first: a loop woken late finds both
					// waiting, and the child's output may be what
					// caused the injection (an agent's "ready" and
					// then its `herdr-pi waiting start`).
					if masterOpen {
						if eof, _ := readMaster(); eof {
							masterOpen = false
						}
					}
					flushInject(false, false)
				}
			}
		}
		// The quiet wait is over, but output waiting to be read means the
		// child was not quiet: the loop was late (a busy machine, a
		// terminal that took no output for a while), and what waits may
		// finish the sequence. It is read first, and its flushInject below
		// puts the forced write off. Nor is a child quiet that can run
		// but was not given a core (several agents on a busy machine): it
		// is starved, not finished, so the write waits another quiet wait
		// and asks again (foregroundRunnable). Only injectCap forces it
		// past either.
		if now := time.Now(); !injectBy.IsZero() && !now.Before(injectBy) {
			outputWaits := mi >= 0 && masterOpen && fds[mi].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) != 0
			switch {
			case !now.Before(injectSince.Add(l.injectCap)):
				flushInject(true, false)
			case outputWaits: // read below first
			case !bnd.clean && masterOpen && !childDone && foregroundRunnable(l.mfd):
				waitQuiet(now)
			default:
				flushInject(true, false)
			}
		}

		if mi >= 0 && masterOpen {
			re := fds[mi].Revents
			if re&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) != 0 {
				eof, _ := readMaster()
				flushInject(false, true)
				if eof {
					// EIO: no slave fd is left, but the child may still be
					// alive (coreutils closes 0-2 before exiting). Closing
					// the master now would hang it up with SIGHUP, so stop
					// reading and keep it open until the child is reaped.
					masterOpen = false
				}
			}
			if masterOpen && re&unix.POLLOUT != 0 {
				feedMaster()
			}
		}

		if ii >= 0 && fds[ii].Revents != 0 && stdinOpen && !servedInput {
			readInput()
		}
	}
}

// suspend follows the child into a job-control stop (Ctrl-Z in the
// agent; the leader stopped with it): give the caller's terminal its mode
// back, stop ourselves so the caller's shell sees the job stopped, and once
// we are continued (fg) take raw mode again and continue the leader, which
// continues the child's process group. When our own process group is
// orphaned (no shell with job control started us) the kernel discards the
// stop and we resume the child at once rather than leave it frozen.
// With the terminal gone there is nobody to return to: just continue.
func (l *loop) suspend(termLost bool) {
	if !termLost {
		l.onStop()
		// Suspending and Resumed frame a stop that happens: a caller
		// that shows the child stopped (a pane turned idle, "fg resumes
		// it") must not do so for the instant an orphaned group's child
		// is stopped, with no shell to fg it from.
		stops := !l.orphaned()
		if stops && l.o.Suspending != nil {
			suspending(l.o.Suspending)
		}
		l.stopSelf()
		l.onCont()
		if stops && l.o.Resumed != nil {
			l.o.Resumed()
		}
	}
	_ = unix.Kill(-l.pid, unix.SIGCONT)
}

// suspending runs f, the caller's Suspending, with SIGTSTP ignored. The
// caller's terminal is cooked again meanwhile, so a second Ctrl-Z there
// while f waits (for a Herdr slow to answer) would stop this process
// inside f, and stopSelf would stop it again at fg: one stop asked for,
// two fg needed. Ignored, the second Ctrl-Z is dropped; the stop that
// follows is the one it asked for. SIGTSTP's action is set and put back
// with the system call itself: Go's runtime does not take SIGTSTP over
// unless asked to, and signal.Reset after signal.Ignore leaves it ignored.
// A SIGTSTP this process was started with ignored stays so. A command
// started meanwhile by another part would inherit the ignore: f is short
// (wrap bounds it to 0.5 s).
func suspending(f func()) {
	// struct kernel_sigaction begins with the handler on every Linux
	// architecture, and 4 words hold the whole of it.
	ignore, old := [4]uint64{1}, [4]uint64{} // 1: SIG_IGN
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGTSTP),
		uintptr(unsafe.Pointer(&ignore[0])), uintptr(unsafe.Pointer(&old[0])), 8, 0, 0)
	if errno == 0 {
		defer unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGTSTP),
			uintptr(unsafe.Pointer(&old[0])), 0, 8, 0, 0)
	}
	f()
}

// stopSelf stops this process as Ctrl-Z would. The signal goes to the
// calling thread (locked to the goroutine for the call, so the thread
// asked for is the one that calls), so the stop has happened and ended, or
// was discarded, by the time the call returns.
func stopSelf() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = unix.Tgkill(unix.Getpid(), unix.Gettid(), unix.SIGTSTP)
}
