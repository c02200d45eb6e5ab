package control

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/herdr-pi/herdr-pi/internal/buildinfo"
)

// Version skew. Wrappers run for days and people upgrade herdr-pi under
// them, so `status`, `waiting`, pane hooks and `open` of one build meet
// wrappers of another. Both hellos name the build they come from
// (Message.HerdrPi): old peers ignore the field, as encoding/json ignores
// any field it does not know, and a hello without it comes from a build
// older than the field. Whichever side sees that the other lacks
// something it needs (a method, a message type, a protocol version) says
// so naming both builds and the way out, instead of a bare refusal, a
// silent hang-up or "wrong token".
//
// ProtocolVersion changes only when an older peer would misread the
// newer one; additions (a method, a field) leave it as it is and are
// found out by the refusal they meet. A peer of a higher version is
// refused in words by either side.

// ErrSkew marks an error that comes of a command and a wrapper of
// different herdr-pi builds.
var ErrSkew = errors.New("different herdr-pi builds")

// Build names this binary's build as the hello carries it: the release
// (or module version, or "devel") and the commit it was built from, when
// the release does not name it already (internal/buildinfo).
var Build = sync.OnceValue(func() string {
	in := buildinfo.Read()
	v, rev := in.Version, in.Revision
	if rev != "" && !strings.Contains(v, rev[:min(7, len(rev))]) {
		if in.Modified {
			rev += "+dirty"
		}
		v += " (" + rev + ")"
	}
	return v
})

// maxBuild bounds the build a hello names.
const maxBuild = 128

// buildWords names a peer's build for a sentence: an empty one is a
// build from before hellos named it.
func buildWords(b string) string {
	if b == "" {
		return "an older herdr-pi (from before builds named themselves)"
	}
	return "herdr-pi " + Clip(b)
}

// restartWrapper is the way out when the wrapper is the older side, or
// when it cannot be told which is.
const restartWrapper = "restart the wrapper under the herdr-pi you run now (quit its agent and start it again with 'herdr-pi wrap …' in its pane)"

// skewError is the client's error for a wrapper that refused what this
// build asked (text is its refusal), naming both builds.
func skewError(text, wrapper string) error {
	return fmt.Errorf("%w: %s; the wrapper runs %s, this command is herdr-pi %s: %s",
		ErrSkew, text, buildWords(wrapper), Build(), restartWrapper)
}

// skewWords is the server's half: what it says to a peer that asked for
// something it does not know.
func (s *Server) skewWords(peer string) string {
	return fmt.Sprintf("this wrapper runs herdr-pi %s and the asking command is %s: %s",
		Clip(s.build()), buildWords(peer), restartWrapper)
}

func (s *Server) build() string {
	if s.cfg.Build != "" {
		return s.cfg.Build
	}
	return Build()
}

// unknownMethod is how every build's wrapper begins its refusal of a
// method it does not know.
const unknownMethod = "unknown method "

// unknownTypeError is a line whose message type this build does not know
// (a newer peer's); the server answers it before it hangs up.
type unknownTypeError struct{ Type string }

func (e *unknownTypeError) Error() string {
	return fmt.Sprintf("unknown message type %q", Clip(e.Type))
}
