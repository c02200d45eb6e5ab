package hostinfo

import (
	"runtime"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The line names the CPUs, the kernel and the Go that ran the measurement.
func TestMachineNamesCPUsKernelAndGo(t *testing.T) {
	m := Machine()
	for _, want := range []string{runtime.Version(), "; Linux ", " CPUs"} {
		if !strings.Contains(m, want) {
			t.Errorf("%q lacks %q", m, want)
		}
	}
	if strings.Contains(m, "Linux ?") {
		t.Errorf("%q: the kernel release was not read", m)
	}
}
