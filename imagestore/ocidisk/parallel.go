package ocidisk

import (
	"context"
	"errors"
	"sync"
)

// parallel hands the indices 0..n-1 to at most workers goroutines. Each
// runs work over the indices it is given (it sets itself up first, e.g. its
// buffer and codec); the first error cancels the rest, and every error is
// returned.
func parallel(ctx context.Context, workers, n int, work func(ctx context.Context, next <-chan int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range min(workers, max(n, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := work(ctx, next); err != nil {
				errs <- err
				cancel()
				for range next { // let the feeder finish
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if err := errors.Join(all...); err != nil {
		return err
	}
	return ctx.Err()
}
