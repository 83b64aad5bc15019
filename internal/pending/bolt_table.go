package pending

import (
	"bytes"
	"context"
	"fmt"

	bbolt "go.etcd.io/bbolt"
)

// Table is a named bucket of small records beside the questions in a Bolt
// file, for state that must survive restarts with the questions it governs
// (session capabilities). Its writes share the file's group commits.
type Table struct {
	bolt *Bolt
	name []byte
}

// Table returns the table called name, creating its bucket on first write.
// "questions", "meta" and "gone_keys" are the file's own and cannot be used.
func (b *Bolt) Table(name string) (*Table, error) {
	if name == "" || name == string(bucketQuestions) || name == string(bucketMeta) || name == string(bucketGoneKeys) || len(name) > bbolt.MaxKeySize {
		return nil, fmt.Errorf("%s: %q cannot be used as a table name", b.path, name)
	}
	return &Table{bolt: b, name: []byte(name)}, nil
}

// Load returns every record of the table, keyed by its key.
func (t *Table) Load(ctx context.Context) (map[string][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("load %s from %s: %w", t.name, t.bolt.path, err)
	}
	if err := t.bolt.write(nil, true); err != nil {
		return nil, t.bolt.failed("load "+string(t.name), err)
	}
	records := make(map[string][]byte)
	err := guardCorruption(func() error {
		return t.bolt.db.View(func(tx *bbolt.Tx) error {
			bucket := tx.Bucket(t.name)
			if bucket == nil {
				return nil
			}
			return bucket.ForEach(func(k, v []byte) error {
				records[string(k)] = append([]byte(nil), v...)
				return nil
			})
		})
	})
	if err != nil {
		return nil, t.bolt.failed("load "+string(t.name), err)
	}
	return records, nil
}

// Put stores value under key; it returns once the write is committed.
func (t *Table) Put(ctx context.Context, key string, value []byte) error {
	return t.update(ctx, "store", walOp{bucket: t.name, key: []byte(key), value: value})
}

// Delete removes key; removing a key that is not there is not an error.
func (t *Table) Delete(ctx context.Context, key string) error {
	return t.update(ctx, "delete", walOp{bucket: t.name, key: []byte(key), del: true})
}

func (t *Table) update(ctx context.Context, verb string, op walOp) error {
	what := fmt.Sprintf("%s %s %q", verb, t.name, cutID(string(op.key)))
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s in %s: %w", what, t.bolt.path, err)
	}
	if !op.del {
		op.value = bytes.Clone(op.value) // the caller may reuse it once we return
		if op.value == nil {
			op.value = []byte{}
		}
	}
	if err := t.bolt.write([]walOp{op}, false); err != nil {
		return t.bolt.failed(what, err)
	}
	return nil
}
