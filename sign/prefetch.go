package sign

import "context"

// Prefetched is a signer loaded in the background: Prefetch starts the
// load, Signer waits for it. It wraps a loader, so a caller that needs the
// key late (a build signs after its solve) does not wait for cosign's
// scrypt (about 0.2 s) at that point. The key is read and decrypted
// whether or not Signer is ever called.
type Prefetched struct {
	done chan struct{}
	s    *Signer
	err  error
}

// Prefetch starts load in the background with ctx and returns at once.
func Prefetch(ctx context.Context, load func(context.Context) (*Signer, error)) *Prefetched {
	p := &Prefetched{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.s, p.err = load(ctx)
	}()
	return p
}

// PrefetchKey is Prefetch of LoadKey(ctx, keyPath, password).
func PrefetchKey(ctx context.Context, keyPath string, password Password) *Prefetched {
	return Prefetch(ctx, func(ctx context.Context) (*Signer, error) { return LoadKey(ctx, keyPath, password) })
}

// Signer waits for the load and returns its signer or error (the same on
// every call), or ctx's error if ctx ends first.
func (p *Prefetched) Signer(ctx context.Context) (*Signer, error) {
	select {
	case <-p.done:
		return p.s, p.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
