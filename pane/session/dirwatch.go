package session

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/internal/guard"
)

// dirWatch tells, through inotify, when something in one directory was
// written, created, moved in or removed: the Watcher polls at once instead
// of at its next tick, so a reply that ends on the marker is read within
// milliseconds of Pi appending it, not up to a whole interval later
// (blocked latency p99 was 241 ms with the 250 ms tick alone). The tick
// stays: it finds a directory that did not exist yet, and covers file
// systems where inotify says nothing (network mounts).
//
// It watches the directory rather than the file: Pi creates the file
// lazily, and /new, /resume and a second Pi may replace it.
type dirWatch struct {
	f    *os.File // the inotify descriptor, non-blocking, in the runtime's poller
	poke func(name string)
	done chan struct{}

	mu  sync.Mutex
	dir string
	wd  int // -1: none
}

// watchMask is what makes a poll worth it.
const watchMask = unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_CREATE | unix.IN_MOVED_TO |
	unix.IN_MOVED_FROM | unix.IN_DELETE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// newDirWatch starts the reader; poke gets the name each event is about
// ("" for the directory itself). Without inotify it returns an error and
// the Watcher keeps to its tick.
func newDirWatch(poke func(name string), logf guard.Logf) (*dirWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, err
	}
	d := &dirWatch{f: os.NewFile(uintptr(fd), "inotify"), poke: poke, done: make(chan struct{}), wd: -1}
	// A panic reading the events (or in poke) ends them, not the wrapper;
	// close still finds done closed, and the Watcher's tick still polls.
	go func() {
		defer close(d.done)
		guard.Run(logf, "session: the directory watch", "changes are seen at the next tick instead; the agent runs on", d.read)
	}()
	return d, nil
}

// follow watches dir instead of what was watched before, and says whether
// the watch is new. A directory that does not exist yet is an error; the
// caller tries again at its next tick.
func (d *dirWatch) follow(dir string) (added bool, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if dir == d.dir && d.wd >= 0 {
		return false, nil
	}
	rc, err := d.f.SyscallConn()
	if err != nil {
		return false, err
	}
	var wd int
	var werr error
	if err := rc.Control(func(fd uintptr) {
		if d.wd >= 0 {
			_, _ = unix.InotifyRmWatch(int(fd), uint32(d.wd))
			d.wd = -1
		}
		wd, werr = unix.InotifyAddWatch(int(fd), dir, watchMask)
	}); err != nil {
		return false, err
	}
	if werr != nil {
		d.dir = ""
		return false, werr
	}
	d.dir, d.wd = dir, wd
	return true, nil
}

// lost forgets the watch after the kernel dropped it (the directory was
// removed or moved): the next follow adds it again.
func (d *dirWatch) lost(wd int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if wd == d.wd {
		d.dir, d.wd = "", -1
	}
}

// close stops the reader and waits for it.
func (d *dirWatch) close() {
	_ = d.f.Close()
	<-d.done
}

func (d *dirWatch) read() {
	buf := make([]byte, 64<<10)
	for {
		n, err := d.f.Read(buf)
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				return
			}
			// An overflowed or broken queue: poll once and stop; the
			// tick carries on.
			d.poke("")
			return
		}
		for p := buf[:n]; len(p) >= unix.SizeofInotifyEvent; {
			wd := int(int32(binary.NativeEndian.Uint32(p[0:4])))
			mask := binary.NativeEndian.Uint32(p[4:8])
			nameLen := int(binary.NativeEndian.Uint32(p[12:16]))
			end := min(unix.SizeofInotifyEvent+nameLen, len(p))
			name := string(trimNUL(p[unix.SizeofInotifyEvent:end]))
			p = p[end:]
			if mask&(unix.IN_IGNORED|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
				d.lost(wd)
			}
			d.poke(name)
		}
	}
}

// trimNUL cuts the NUL padding inotify puts after a name.
func trimNUL(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

// watchedDir is the directory worth watching for a target file, or for the
// locator's search when no file is known yet.
func watchedDir(path string, l Locator) string {
	switch {
	case path != "":
		return filepath.Dir(path)
	case l.None:
		return ""
	case l.Path != "":
		return filepath.Dir(l.Path)
	}
	return l.Dir
}
