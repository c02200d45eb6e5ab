package screen

import (
	"encoding/base64"
	"math/rand/v2"
	"testing"

	"github.com/herdr-pi/herdr-pi/pane/pty"
)

// BenchmarkWriteBase64Lines is one flood look: 16 KiB of 160-column lines on
// a 200x50 screen, every line a scroll.
func BenchmarkWriteBase64Lines(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	var p []byte
	for len(p) < defaultMaxFeed {
		raw := make([]byte, 120)
		for i := range raw {
			raw[i] = byte(rng.Uint32())
		}
		p = append(p, base64.StdEncoding.EncodeToString(raw)...)
		p = append(p, '\r', '\n')
	}
	p = p[:defaultMaxFeed]
	s := New(50, 200)
	defer s.Close()
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		_ = s.Write(p)
	}
}

// BenchmarkFeedFlood is one look at a flood of base64 lines: a 64 KiB batch
// of which the newest screenful is drawn.
func BenchmarkFeedFlood(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	var p []byte
	for len(p) < 64<<10 {
		raw := make([]byte, 120)
		for i := range raw {
			raw[i] = byte(rng.Uint32())
		}
		p = append(p, base64.StdEncoding.EncodeToString(raw)...)
		p = append(p, '\r', '\n')
	}
	s := New(50, 200)
	defer s.Close()
	batch := pty.Batch{Segments: []pty.Segment{{Data: p}}}
	for b.Loop() {
		feed(s, batch, defaultMaxFeed, nil)
	}
}
