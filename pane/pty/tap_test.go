package pty

import (
	"bytes"
	"testing"
)

func collect(b Batch) (data []byte, sizes []Size) {
	for _, s := range b.Segments {
		data = append(data, s.Data...)
		if s.Resize != nil {
			sizes = append(sizes, *s.Resize)
		}
	}
	return
}

func TestTapKeepsNewestWithinLimit(t *testing.T) {
	tap := NewTap(10)
	tap.Write([]byte("0123456789"))
	tap.Write([]byte("abcd"))
	b := tap.Take()
	data, _ := collect(b)
	if string(data) != "456789abcd" || b.Lost != 4 {
		t.Fatalf("got %q lost %d, want the newest 10 bytes and 4 lost", data, b.Lost)
	}
	tap.Write(bytes.Repeat([]byte("x"), 25))
	b = tap.Take()
	data, _ = collect(b)
	if len(data) != 10 || b.Lost != 15 {
		t.Fatalf("oversized write: kept %d lost %d", len(data), b.Lost)
	}
	if total, lost := tap.Stats(); total != 39 || lost != 19 {
		t.Fatalf("stats total %d lost %d", total, lost)
	}
}

func TestTapResizeInBand(t *testing.T) {
	tap := NewTap(100)
	tap.Write([]byte("ab"))
	tap.Resize(Size{Rows: 10, Cols: 20})
	tap.Write([]byte("cd"))
	b := tap.Take()
	if len(b.Segments) != 2 || string(b.Segments[0].Data) != "ab" || b.Segments[0].Resize == nil ||
		*b.Segments[0].Resize != (Size{10, 20}) || string(b.Segments[1].Data) != "cd" {
		t.Fatalf("segments %+v", b.Segments)
	}
	tap.Recycle(b)
}

func TestTapResizeSurvivesDrops(t *testing.T) {
	tap := NewTap(4)
	for i := 0; i < 100; i++ {
		tap.Resize(Size{Rows: uint16(i + 1), Cols: 80})
	}
	tap.Write([]byte("abcdefgh"))
	b := tap.Take()
	data, sizes := collect(b)
	if string(data) != "efgh" {
		t.Fatalf("data %q", data)
	}
	if len(sizes) != 1 || sizes[0].Rows != 100 {
		t.Fatalf("want only the newest size kept, got %v", sizes)
	}
}

func TestTapReadySignalsOnce(t *testing.T) {
	tap := NewTap(100)
	tap.Write([]byte("a"))
	tap.Write([]byte("b"))
	select {
	case <-tap.Ready():
	default:
		t.Fatal("not ready after write")
	}
	select {
	case <-tap.Ready():
		t.Fatal("ready twice for one batch")
	default:
	}
	tap.Close()
	<-tap.Ready()
	if b := tap.Take(); !b.Closed {
		t.Fatal("close not reported")
	}
}
