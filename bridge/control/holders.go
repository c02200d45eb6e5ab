package control

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/internal/guard"
)

// A wait opened with `herdr-pi waiting start --pid PID` is held by that
// process: when it exits, by any path (kill -9 included), the server closes
// the wait as a `waiting stop` for the same source and id would. A hook
// that dies half way no longer leaves the pane blocked for ever.
//
// The process is pinned with a pidfd when the request arrives, so a pid
// reused later can never hold the wait in its place, and the pidfd sits in
// Go's poller: one goroutine per holder sleeps until the kernel says the
// process exited, or until the holder is let go (stop, a later start of
// the same wait, the server's close), which closes the pidfd and wakes it.

// maxHolders bounds the held waits: each costs a descriptor and a
// goroutine for as long as its process runs.
const maxHolders = 256

// holder is the process holding one open wait.
type holder struct {
	w   WaitRequest // the start that opened it (its source and id close it)
	pid int
	fd  *os.File // the pidfd, non-blocking, in Go's poller
	// released is set before fd closes: the await it wakes then ends
	// quietly.
	released atomic.Bool
}

// pinHolder pins pid as the holder of the wait w opens. The process must
// exist and belong to uid, the uid the control socket admits: a wait may
// be tied only to a process of the user who could have stopped it.
func pinHolder(w WaitRequest, uid int) (*holder, error) {
	fd, err := pinProcess(w.PID, uid)
	if err == nil {
		err = unix.SetNonblock(fd, true) // so that os.NewFile puts it in the poller
		if err != nil {
			_ = unix.Close(fd)
		}
	}
	if err != nil {
		return nil, err
	}
	return &holder{w: w, pid: w.PID, fd: os.NewFile(uintptr(fd), "pidfd:"+strconv.Itoa(w.PID))}, nil
}

// CheckHolder says why pid cannot hold a wait of a wrapper running as
// uid, or nil when it can: `waiting start --pid` checks before it asks the
// wrapper, to call a wrong pid the caller's mistake; the wrapper checks
// again when it pins the process.
func CheckHolder(pid, uid int) error {
	if pid <= 1 {
		return badHolder(pid)
	}
	fd, err := pinProcess(pid, uid)
	if err == nil {
		_ = unix.Close(fd)
	}
	return err
}

// pinProcess opens a pidfd on pid, a live process of uid.
func pinProcess(pid, uid int) (int, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return -1, noSuchHolder(pid)
	}
	if err != nil {
		return -1, fmt.Errorf("--pid %d: cannot follow that process: %v", pid, err)
	}
	// Read after the pidfd is open: a pid reused before is the new
	// process in both; a process that exits after is seen by the pidfd.
	owner, err := processUID(pid)
	switch {
	case errors.Is(err, os.ErrNotExist):
		err = noSuchHolder(pid)
	case err != nil:
		err = fmt.Errorf("--pid %d: cannot read who owns that process: %v", pid, err)
	case owner != uid:
		err = fmt.Errorf("--pid %d: owned by uid %d, not the wrapper's uid %d", pid, owner, uid)
	case PidfdExited(fd, 0):
		err = fmt.Errorf("--pid %d: the process has already exited", pid)
	}
	if err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

func noSuchHolder(pid int) error {
	return fmt.Errorf("--pid %d: no such process (give a script's pid, e.g. --pid $$)", pid)
}

// badHolder refuses pid 1 (it never exits) and the pids that name no
// single process.
func badHolder(pid int) error {
	return fmt.Errorf("--pid %d cannot hold a wait: give a script's pid, e.g. --pid $$", pid)
}

// processUID is the effective uid of pid, the one SO_PEERCRED would give
// for a connection it made.
func processUID(pid int) (int, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Uid:"); ok {
			// real, effective, saved, filesystem
			if ids := strings.Fields(rest); len(ids) >= 2 {
				return strconv.Atoi(ids[1])
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/%d/status has no Uid line", pid)
}

// PidfdExited waits up to d (0: not at all) for the process of pidfd fd
// to exit, and says whether it did: a pidfd is readable once its process
// has exited. The live handoff waits on the pane's Pi this way too.
func PidfdExited(fd int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		left := max(time.Until(deadline), 0)
		n, err := unix.Poll(fds, int(left.Milliseconds()))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return false
		case n > 0:
			return true
		case left == 0:
			return false
		}
	}
}

// await blocks until the process exits (true) or the holder is released
// (false: its pidfd closed under it).
func (h *holder) await() (bool, error) {
	rc, err := h.fd.SyscallConn()
	if err != nil {
		return false, err
	}
	gone := false
	err = rc.Read(func(fd uintptr) bool {
		gone = PidfdExited(int(fd), 0)
		return gone
	})
	if err != nil && h.released.Load() {
		return false, nil
	}
	return gone, err
}

// release lets go of the pidfd, which ends its await.
func (h *holder) release() {
	if h != nil {
		h.released.Store(true)
		_ = h.fd.Close()
	}
}

// hold makes h the holder of its wait, or, with h nil, leaves the wait of
// key without one (a stop, or a start without --pid); the holder it had is
// let go. The latest start of a wait decides who holds it. Called under the
// delivery lock, with the request it comes with.
func (s *Server) hold(key string, h *holder) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h != nil && s.holders[key] == nil && len(s.holders) >= maxHolders {
		return fmt.Errorf("--pid %d: %d waits have holders already; stop some first", h.pid, maxHolders)
	}
	if old := s.holders[key]; old != nil {
		old.release()
		delete(s.holders, key)
	}
	if h == nil {
		return nil
	}
	if s.closed {
		return errors.New("the wrapper is closing")
	}
	s.holders[key] = h
	guard.Go(&s.wg, s.cfg.Logf, "control: the holder watch of a wait", "that wait stays open until its stop", func() { s.watchHolder(key, h) })
	return nil
}

// letGo ends h's hold on key if it still has it, and says whether it did.
func (s *Server) letGo(key string, h *holder) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holders[key] != h {
		return false
	}
	delete(s.holders, key)
	h.release()
	return true
}

// watchHolder closes the wait when its holder exits, unless the wait was
// stopped or given another holder first.
func (s *Server) watchHolder(key string, h *holder) {
	gone, err := h.await()
	if err != nil {
		s.cfg.Logf("control: the wait %s can no longer follow its holder (pid %d): %v; it stays open until its stop", key, h.pid, err)
		return
	}
	if !gone {
		return
	}
	s.call(func() {
		if !s.letGo(key, h) {
			return
		}
		s.cfg.Logf("control: pid %d, which held the wait %s, exited: the wait is closed", h.pid, key)
		if err := s.cfg.Requests.Wait(WaitRequest{Action: WaitStop, Source: h.w.Source, ID: h.w.ID}); err != nil {
			s.cfg.Logf("control: closing the wait %s after its holder exited: %v", key, err)
		}
	})
}

// releaseHolders lets every holder go (the server closes). Called under mu.
func (s *Server) releaseHolders() {
	for key, h := range s.holders {
		h.release()
		delete(s.holders, key)
	}
}
