package pending

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
)

// FuzzReadFrames feeds the frame reader arbitrary bytes: it must not panic,
// and every frame it accepts must be whole, of the asked epoch, pass its
// CRC and decode to ops that bbolt would take.
func FuzzReadFrames(f *testing.F) {
	ops := []walOp{
		{bucket: []byte("questions"), key: []byte("que_1"), value: []byte(`{"id":"que_1"}`)},
		{bucket: []byte("sessions"), key: []byte("ses_1"), del: true},
	}
	two := appendFrame(appendFrame(nil, 7, encodeOps(nil, ops)), 7, encodeOps(nil, ops[:1]))
	f.Add(two, uint64(7))
	f.Add(two[:len(two)-3], uint64(7))
	f.Add(two, uint64(8))
	f.Add(append(two, make([]byte, 40)...), uint64(7))
	f.Fuzz(func(t *testing.T, area []byte, epoch uint64) {
		got := readFrames(area, epoch)
		if got.end > len(area) {
			t.Fatalf("end %d is past the area's %d bytes", got.end, len(area))
		}
		off := 0
		for i, frameOps := range got.ops {
			if len(area)-off < walFrameHeader {
				t.Fatalf("frame %d: accepted with no room for its header", i)
			}
			length := int(binary.LittleEndian.Uint32(area[off:]))
			if off+walFrameHeader+length > len(area) {
				t.Fatalf("frame %d: accepted though cut short", i)
			}
			if e := binary.LittleEndian.Uint64(area[off+8:]); e != epoch {
				t.Fatalf("frame %d: accepted with epoch %d, asked for %d", i, e, epoch)
			}
			want := crc32.Checksum(area[off+8:off+walFrameHeader+length], castagnoli)
			if binary.LittleEndian.Uint32(area[off+4:]) != want {
				t.Fatalf("frame %d: accepted though its CRC fails", i)
			}
			for _, op := range frameOps {
				if err := op.check(); err != nil {
					t.Fatalf("frame %d: accepted an op bbolt refuses: %v", i, err)
				}
			}
			off += walFrameHeader + length
		}
		if off != got.end {
			t.Fatalf("frames end at %d, reader says %d", off, got.end)
		}
		if got.damaged && got.tail == "" {
			t.Fatal("damaged without saying why")
		}
	})
}

// The frame a commit writes is the frame appendFrame makes of the encoded
// ops, byte for byte, and its size is what the commit reserved.
func TestOpsFrameEncoding(t *testing.T) {
	t.Parallel()
	ops := []walOp{
		{bucket: []byte("questions"), key: []byte("que_1"), value: make([]byte, 300)},
		{bucket: []byte("sessions"), key: []byte("ses_1"), del: true},
		{bucket: []byte("kv"), key: make([]byte, 200), value: []byte{}},
	}
	frame := encodeOpsFrame(9, ops)
	if want := appendFrame(nil, 9, encodeOps(nil, ops)); string(frame) != string(want) {
		t.Errorf("encodeOpsFrame and appendFrame differ")
	}
	if len(frame) != opsFrameSize(ops) || cap(frame) != len(frame) {
		t.Errorf("frame of %d bytes (cap %d), opsFrameSize says %d", len(frame), cap(frame), opsFrameSize(ops))
	}
	if got := readFrames(frame, 9); len(got.ops) != 1 || len(got.ops[0]) != 3 || got.tail != "" {
		t.Errorf("read back: %d frames, tail %q", len(got.ops), got.tail)
	}
}
