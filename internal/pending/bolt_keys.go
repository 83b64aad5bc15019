package pending

import (
	"context"
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"
)

// bucketGoneKeys holds the Idempotency-Keys of forgotten questions
// (GoneKey as JSON, keyed by owner, NUL, key), created on first write.
var bucketGoneKeys = []byte("gone_keys")

var _ KeyJournal = (*Bolt)(nil)

func goneKeyName(g GoneKey) []byte { return []byte(g.Owner + "\x00" + g.Key) }

// Forget deletes the records with ids, deletes drop and stores keep, in
// one transaction shared with any other write running at the same time.
func (b *Bolt) Forget(ctx context.Context, ids []string, keep, drop []GoneKey) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("forget questions in %s: %w", b.path, err)
	}
	ops := make([]walOp, 0, len(ids)+len(keep)+len(drop))
	for _, id := range ids {
		ops = append(ops, walOp{bucket: bucketQuestions, key: []byte(id), del: true})
	}
	for _, g := range drop {
		ops = append(ops, walOp{bucket: bucketGoneKeys, key: goneKeyName(g), del: true})
	}
	for _, g := range keep {
		data, err := json.Marshal(g)
		if err != nil {
			return b.failed("forget questions", err)
		}
		ops = append(ops, walOp{bucket: bucketGoneKeys, key: goneKeyName(g), value: data})
	}
	if len(ops) == 0 {
		return nil
	}
	if err := b.write(ops, false); err != nil {
		return b.failed("forget questions", err)
	}
	return nil
}

// LoadGone returns every stored GoneKey. One that does not decode fails
// the load with an error wrapping ErrCorrupt.
func (b *Bolt) LoadGone(ctx context.Context) ([]GoneKey, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("load forgotten keys from %s: %w", b.path, err)
	}
	if err := b.write(nil, true); err != nil {
		return nil, b.failed("load forgotten keys", err)
	}
	var keys []GoneKey
	err := guardCorruption(func() error {
		return b.db.View(func(tx *bbolt.Tx) error {
			bucket := tx.Bucket(bucketGoneKeys)
			if bucket == nil {
				return nil
			}
			return bucket.ForEach(func(k, v []byte) error {
				var g GoneKey
				if err := json.Unmarshal(v, &g); err != nil || string(goneKeyName(g)) != string(k) {
					return fmt.Errorf("%w: forgotten key %q does not decode", ErrCorrupt, cutID(string(k)))
				}
				keys = append(keys, g)
				return nil
			})
		})
	})
	if err != nil {
		return nil, b.failed("load forgotten keys", err)
	}
	return keys, nil
}
