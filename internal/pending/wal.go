package pending

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	bbolt "go.etcd.io/bbolt"
)

// The write-ahead log's on-disk format. Two segment files beside the
// database (<db>-wal.0 and <db>-wal.1) are written in turn. Each starts with
// a header:
//
//	magic [8]byte | epoch uint64 | CRC-32C of the 16 bytes before it
//
// padded with zeroes to walHeaderSize, then frames, one per group commit:
//
//	length uint32 | CRC-32C of epoch and payload | epoch uint64 | payload
//
// A frame belongs to its segment only while its epoch is the header's: a
// segment is reused under a new, higher epoch, so the frames of its earlier
// use that lie past the new tail are never read as new. All integers are
// little-endian.
const (
	walMagic       = "qdwal\x00\x00\x01"
	walHeaderSize  = 4096
	walFrameHeader = 16
	// defaultWALSegment is the size of each segment file, written with
	// zeroes when it is created so that commits overwrite in place and a
	// sync never has to record a new file size. A segment is sealed and
	// checkpointed once half full; with 512 agents a group's frame is
	// several hundred KiB, and at 2 or 4 MiB the next segment filled
	// before the last one's checkpoint ended, stalling commits (store-level
	// 512-writer runs: 3 400 round trips/s at 2 MiB, 4 200–4 600 at 8, no
	// better at 16).
	defaultWALSegment = 8 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// walOp is one change to a bucket, as logged: a whole-record put or delete.
// Replaying a prefix of the log in order, again, ends in the same state.
type walOp struct {
	bucket, key, value []byte
	del                bool
}

const (
	opPut    byte = 1
	opDelete byte = 2
)

// check refuses an op that bbolt would refuse when it is applied, so that
// the log never holds a change a checkpoint cannot make.
func (op walOp) check() error {
	switch {
	case len(op.bucket) == 0 || len(op.bucket) > bbolt.MaxKeySize:
		return fmt.Errorf("bucket name of %d bytes: %w", len(op.bucket), errOpRefused)
	case len(op.key) == 0:
		return fmt.Errorf("empty key: %w", errOpRefused)
	case len(op.key) > bbolt.MaxKeySize:
		return fmt.Errorf("key of %d bytes, the limit is %d: %w", len(op.key), bbolt.MaxKeySize, errOpRefused)
	case len(op.value) > bbolt.MaxValueSize:
		return fmt.Errorf("value of %d bytes, the limit is %d: %w", len(op.value), bbolt.MaxValueSize, errOpRefused)
	}
	return nil
}

var errOpRefused = errors.New("refused by the database")

// encodeOps appends the payload of a frame holding ops to dst.
func encodeOps(dst []byte, ops []walOp) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ops)))
	for _, op := range ops {
		kind := opPut
		if op.del {
			kind = opDelete
		}
		dst = append(dst, kind)
		dst = appendBytes(dst, op.bucket)
		dst = appendBytes(dst, op.key)
		if !op.del {
			dst = appendBytes(dst, op.value)
		}
	}
	return dst
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// decodeOps reads a frame's payload; the ops it returns share its memory.
func decodeOps(payload []byte) ([]walOp, error) {
	n, used := binary.Uvarint(payload)
	if used <= 0 || n > uint64(len(payload)) {
		return nil, errors.New("bad op count")
	}
	rest := payload[used:]
	ops := make([]walOp, 0, n)
	for range n {
		if len(rest) == 0 {
			return nil, errors.New("op cut short")
		}
		kind := rest[0]
		rest = rest[1:]
		if kind != opPut && kind != opDelete {
			return nil, fmt.Errorf("unknown op kind %d", kind)
		}
		op := walOp{del: kind == opDelete}
		var err error
		if op.bucket, rest, err = readBytes(rest); err != nil {
			return nil, err
		}
		if op.key, rest, err = readBytes(rest); err != nil {
			return nil, err
		}
		if !op.del {
			if op.value, rest, err = readBytes(rest); err != nil {
				return nil, err
			}
			if op.value == nil {
				op.value = []byte{}
			}
		}
		if err := op.check(); err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	if len(rest) != 0 {
		return nil, errors.New("trailing bytes after the last op")
	}
	return ops, nil
}

func readBytes(b []byte) (field, rest []byte, err error) {
	n, used := binary.Uvarint(b)
	if used <= 0 || n > uint64(len(b)-used) {
		return nil, nil, errors.New("field cut short")
	}
	end := used + int(n)
	return b[used:end:end], b[end:], nil
}

// appendFrame appends one frame of epoch holding payload to dst.
func appendFrame(dst []byte, epoch uint64, payload []byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, walFrameHeader)...)
	dst = append(dst, payload...)
	fillFrameHeader(dst[start:], epoch)
	return dst
}

// opsFrameSize is the size of the frame encodeOpsFrame makes of ops.
func opsFrameSize(ops []walOp) int {
	n := walFrameHeader + uvarintLen(uint64(len(ops)))
	for _, op := range ops {
		n += 1 + uvarintLen(uint64(len(op.bucket))) + len(op.bucket) + uvarintLen(uint64(len(op.key))) + len(op.key)
		if !op.del {
			n += uvarintLen(uint64(len(op.value))) + len(op.value)
		}
	}
	return n
}

func uvarintLen(x uint64) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}

// encodeOpsFrame returns one frame of epoch holding ops, encoded in place:
// a group commit's frame is its only copy of the records.
func encodeOpsFrame(epoch uint64, ops []walOp) []byte {
	frame := make([]byte, walFrameHeader, opsFrameSize(ops))
	frame = encodeOps(frame, ops)
	fillFrameHeader(frame, epoch)
	return frame
}

// fillFrameHeader writes the header of frame, whose payload follows it.
func fillFrameHeader(frame []byte, epoch uint64) {
	payload := frame[walFrameHeader:]
	binary.LittleEndian.PutUint32(frame[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint64(frame[8:], epoch)
	crc := crc32.Update(crc32.Checksum(frame[8:walFrameHeader], castagnoli), castagnoli, payload)
	binary.LittleEndian.PutUint32(frame[4:], crc)
}

// walFrames is what readFrames found in a segment's frame area.
type walFrames struct {
	ops  [][]walOp // one entry per whole, valid frame, in order
	end  int       // offset just past the last of them
	tail string    // why reading stopped before the end of the area, "" when it did not
	// damaged: reading stopped at a frame of this epoch that is cut short,
	// fails its CRC or does not decode; not at zeroes or another epoch's
	// leftovers.
	damaged bool
}

// readFrames reads the frames of epoch at the start of area, up to the first
// one that is zero, cut short, of another epoch, fails its CRC or does not
// decode: what a crash leaves at the tail, or what an earlier use of the
// segment left behind it.
func readFrames(area []byte, epoch uint64) walFrames {
	var got walFrames
	for {
		rest := area[got.end:]
		if len(rest) == 0 {
			return got
		}
		if len(rest) < walFrameHeader {
			got.tail = "a frame header cut short"
			got.damaged = true
			return got
		}
		length := binary.LittleEndian.Uint32(rest[0:])
		crc := binary.LittleEndian.Uint32(rest[4:])
		frameEpoch := binary.LittleEndian.Uint64(rest[8:])
		switch {
		case length == 0 && crc == 0 && frameEpoch == 0:
			return got // the unwritten rest of the segment
		case frameEpoch != epoch:
			got.tail = fmt.Sprintf("a frame of epoch %d, not %d", frameEpoch, epoch)
			return got
		case uint64(length) > uint64(len(rest)-walFrameHeader):
			got.tail = fmt.Sprintf("a frame of %d bytes cut short at %d", length, len(rest)-walFrameHeader)
			got.damaged = true
			return got
		}
		payload := rest[walFrameHeader : walFrameHeader+int(length)]
		if crc32.Update(crc32.Checksum(rest[8:16], castagnoli), castagnoli, payload) != crc {
			got.tail = "a frame that fails its CRC"
			got.damaged = true
			return got
		}
		ops, err := decodeOps(payload)
		if err != nil {
			got.tail = fmt.Sprintf("a frame that does not decode: %v", err)
			got.damaged = true
			return got
		}
		got.ops = append(got.ops, ops)
		got.end += walFrameHeader + int(length)
	}
}

// encodeHeader returns a segment header for epoch.
func encodeHeader(epoch uint64) []byte {
	head := make([]byte, walHeaderSize)
	copy(head, walMagic)
	binary.LittleEndian.PutUint64(head[8:], epoch)
	binary.LittleEndian.PutUint32(head[16:], crc32.Checksum(head[:16], castagnoli))
	return head
}

// errNotWAL says a segment file's header is not one this build wrote.
var errNotWAL = errors.New("not a questiond write-ahead log")

// decodeHeader returns the epoch in a segment header; zero for a segment
// that is all zeroes (created, never used).
func decodeHeader(head []byte) (uint64, error) {
	if len(head) < walHeaderSize {
		return 0, fmt.Errorf("%w: %d bytes, shorter than its header", errNotWAL, len(head))
	}
	if allZero(head[:20]) {
		return 0, nil
	}
	if string(head[:8]) != walMagic {
		return 0, fmt.Errorf("%w: its first bytes are %q", errNotWAL, head[:8])
	}
	if crc32.Checksum(head[:16], castagnoli) != binary.LittleEndian.Uint32(head[16:]) {
		return 0, fmt.Errorf("%w: its header fails its CRC", errNotWAL)
	}
	epoch := binary.LittleEndian.Uint64(head[8:])
	if epoch == 0 {
		return 0, fmt.Errorf("%w: its header holds epoch 0", errNotWAL)
	}
	return epoch, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
