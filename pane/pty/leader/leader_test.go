package leader

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// The leader's init must run before most of the program's (see the
// package comment): a package it imports that Go initialises late would
// quietly put every wrapped command's start back by milliseconds.
func TestImportsOnlyWhatGoInitialisesEarly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	late := []string{"strings", "strconv", "fmt", "os/exec", "path/filepath", "reflect", "golang.org/x/sys/unix"}
	for dep := range strings.FieldsSeq(string(out)) {
		for _, l := range late {
			if dep == l {
				t.Errorf("package leader imports %s (directly or not), which Go initialises after most others", dep)
			}
		}
		if strings.HasPrefix(dep, "github.com/") && dep != "github.com/herdr-pi/herdr-pi/pane/pty/leader" {
			t.Errorf("package leader imports %s", dep)
		}
	}
}

func TestStatusIsTheShells(t *testing.T) {
	for _, c := range []struct {
		ws   syscall.WaitStatus
		want int
	}{
		{0 << 8, 0},
		{7 << 8, 7},
		{syscall.WaitStatus(syscall.SIGTERM), 128 + 15},
		{syscall.WaitStatus(syscall.SIGKILL), 128 + 9},
	} {
		if got := Status(c.ws); got != c.want {
			t.Errorf("Status(%#x) = %d, want %d", uint32(c.ws), got, c.want)
		}
	}
}

func TestItoa(t *testing.T) {
	for n, want := range map[int]string{0: "0", 7: "7", 10: "10", 4194304: "4194304", -12: "-12"} {
		if got := itoa(n); got != want {
			t.Errorf("itoa(%d) = %q, want %q", n, got, want)
		}
	}
}
