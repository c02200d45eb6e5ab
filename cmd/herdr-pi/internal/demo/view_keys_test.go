package demo

import (
	"bytes"
	"testing"
	"time"

	creackpty "github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// cooked puts the terminal back in the line mode a shell leaves it in
// when it stops a job (Ctrl-Z) and resumes it (fg): keys echoed and held
// until Enter.
func cooked(t *testing.T, fd int) {
	t.Helper()
	tio, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Lflag |= unix.ECHO | unix.ICANON
	tio.Cc[unix.VMIN], tio.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
}

// After Ctrl-Z and fg the shell has put the terminal back in line mode:
// reading the keys must still never wait (the demo's loop reads them
// every frame: a wait froze it, timeout and Ctrl-C included, until
// Enter), and once the demo is resumed q stops it again without Enter.
func TestKeysAfterTheShellResumedTheDemo(t *testing.T) {
	master, slave, err := creackpty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	v := newView(Options{Out: &bytes.Buffer{}, Styles: plainStyles(), Terminal: &Terminal{Rows: 24, Cols: 80, Keys: slave}}, layout{rows: 24, cols: 80}, false)
	if v.keys == nil {
		t.Fatal("the view does not read keys from the terminal")
	}
	cooked(t, int(slave.Fd()))
	if _, err := master.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	asked := make(chan bool, 1)
	go func() { asked <- v.quitRequested() }()
	select {
	case q := <-asked:
		if q {
			t.Error("q without Enter was read in line mode")
		}
	case <-time.After(10 * time.Second): // a guard against the hang, not a measure
		master.Write([]byte("\n")) // let the read return, so the test can end
		<-asked
		t.Fatal("reading the keys waited for Enter: the demo's loop freezes until a line is typed")
	}
	// SIGCONT: the demo takes its key mode back.
	v.resume()
	if _, err := master.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	// The q typed in line mode is still pending, the new one arrives as
	// the pty passes it on: ask until one is read.
	for i := 0; ; i++ {
		if v.quitRequested() {
			break
		}
		if i == 1000 {
			t.Fatal("q is not read after the demo resumed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	v.end("", nil, summary{})
}
