package handoff

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/control"
)

// A wrapper that is alive but not above the owner's Pi is not its wrapper:
// neither one registered for another pane nor one whose socket a Pi's
// environment names from elsewhere (a copied environment, a wrapper that
// is not its parent). Asking it would hand off through someone else's
// wrap, so the answer is ErrNotWrapped.
func TestOwnerWrapperIgnoresWrappersNotAboveThePi(t *testing.T) {
	base := filepath.Join(t.TempDir(), "rt")
	if err := os.Mkdir(base, 0o700); err != nil {
		t.Fatal(err)
	}
	// Another live process plays a wrapper elsewhere: it registered a pane
	// and has a run directory, but the owner's Pi is not below it.
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	stranger := control.Endpoint{Socket: filepath.Join(base, fmt.Sprintf("run-%d-1", other.Process.Pid), "control.sock"),
		Token: "stranger", PID: other.Process.Pid, PaneID: "w9:p9"}
	if _, err := control.PaneRegistry(base).Register(control.PaneKey("/h.sock", "w9:p9"), stranger); err != nil {
		t.Fatal(err)
	}
	pi := startUnder(t, stranger.Env()...)
	if ep, err := OwnerWrapper(base, pi); !errors.Is(err, ErrNotWrapped) {
		t.Fatalf("a Pi under no wrapper found %+v, %v", ep, err)
	}
}
