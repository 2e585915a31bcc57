package testutil

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// RegistryHandler returns go-containerregistry's in-memory registry, which
// logs nothing.
func RegistryHandler() http.Handler {
	return registry.New(registry.Logger(log.New(io.Discard, "", 0)))
}

// Registry serves a fresh in-memory registry until t's cleanup and returns
// its host:port.
func Registry(t testing.TB) string {
	t.Helper()
	return Serve(t, RegistryHandler())
}

// Serve serves h over plain HTTP until t's cleanup and returns its
// host:port.
func Serve(t testing.TB, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}
