package testenv

import (
	"syscall"
	"testing"
)

// PermissiveUmask sets the process's umask to 000 until the test ends, so
// that a test of a file's mode sees the mode the code asked for and not
// one the environment's umask narrowed: under umask 077 a socket never
// chmod-ed, or a file made 0666, still reads 0600, and the test would pass
// on the mistake it is there to catch. The umask belongs to the whole
// process, so the test must not be parallel (t.Setenv makes that a
// failure) and its neighbours must not create files meanwhile.
func PermissiveUmask(t testing.TB) {
	t.Helper()
	t.Setenv("HERDR_PI_TEST_UMASK", "000") // refused in a parallel test
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })
}
