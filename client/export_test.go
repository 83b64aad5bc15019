package client

import (
	"context"
	"time"
)

// SetPause replaces c's wait between retries, so tests see every retry and
// its delay and decide when it ends.
func SetPause(c *Client, pause func(ctx context.Context, d time.Duration) error) { c.pauseHook = pause }
