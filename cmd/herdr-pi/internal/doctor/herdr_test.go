package doctor

import (
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
)

// A HERDR_SOCKET_PATH that names no socket herdr-pi can connect to (one
// too long for a unix socket's address, which exists only when Herdr
// bound it by a relative name) is the variable's fault: the fix says to
// point it at Herdr's socket, not to restart Herdr.
func TestSocketFixForAPathThatIsNoSocketNamesTheVariable(t *testing.T) {
	for _, kind := range []herdr.FailureKind{herdr.FailNotSocket, herdr.FailTooLong} {
		fix := socketFix(&herdr.TransportError{Kind: kind, Socket: "/x", Method: "ping"})
		if !strings.Contains(fix, "HERDR_SOCKET_PATH") || strings.Contains(fix, "restart Herdr") {
			t.Errorf("%s: fix %q, want the variable named and no restart", kind, fix)
		}
	}
}
