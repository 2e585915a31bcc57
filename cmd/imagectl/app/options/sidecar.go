package options

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/imagectl/imagectl/inject"
)

// SidecarOptions are the flags that say which sidecar goes into a manifest
// (package inject's options), for the verbs that inject one: imagectl
// inject (which adds its own: the file, --resolve-digest, --secret-file,
// ...) and imagectl debug.
type SidecarOptions struct {
	Image string
	// Repository is --repository (inject.DefaultRepository by default).
	Repository       RepositoryOptions
	NoResolve        bool
	HTTPTimeout      time.Duration
	Name             string
	Port             int
	SecretName       string
	SecretKey        string
	Requests, Limits map[string]string
	PullSecret       string
	AllowHostPath    bool
	Restricted       bool
	ArbitraryUID     bool
}

// AddFlags adds the sidecar's flags, as imagectl inject spells them.
func (o *SidecarOptions) AddFlags(fl *pflag.FlagSet) {
	fl.StringVar(&o.Image, "image", "", "the sidecar image (default: the published image for the manifest's Ray version)")
	o.Repository.Default = inject.DefaultRepository
	o.Repository.Usage = "where the default image is taken from: REGISTRY/NAME, or REGISTRY alone (HOST[:PORT]) to keep the published name"
	o.Repository.AddFlags(fl)
	fl.BoolVar(&o.NoResolve, "no-resolve", false, "do not list the repository's tags: the default image is the floating tag of the manifest's Ray minor")
	fl.DurationVar(&o.HTTPTimeout, "http-timeout", 10*time.Second, "bound on each registry lookup")
	fl.StringVar(&o.Name, "name", inject.DefaultName, "the sidecar container's name")
	fl.IntVar(&o.Port, "port", inject.DefaultPort, "the code-server port in the sidecar")
	fl.StringVar(&o.SecretName, "secret-name", inject.DefaultSecretName, "the Secret holding the code-server password (created with a random password unless it exists)")
	fl.StringVar(&o.SecretKey, "secret-key", inject.DefaultSecretKey, "the key of the password in that Secret")
	fl.StringToStringVar(&o.Requests, "requests", inject.DefaultRequests, "the sidecar's resource requests (each replaces that default; an empty value drops it)")
	fl.StringToStringVar(&o.Limits, "limits", inject.DefaultLimits, "the sidecar's resource limits (each replaces that default; an empty value drops it)")
	fl.StringVar(&o.PullSecret, "image-pull-secret", "", "add this Secret to the head pod's imagePullSecrets (a private registry)")
	fl.BoolVar(&o.AllowHostPath, "allow-hostpath", false, "let the sidecar share a hostPath volume the Ray container mounts at /tmp/ray (the node's directory opens in the web IDE)")
	fl.BoolVar(&o.Restricted, "restricted", false, "a sidecar PodSecurity \"restricted\" admits: the Ray container's non-root user, no capability, a read-only root with emptyDirs at /run, /tmp and /config (an init container copies the image's /config), linuxserver's non-root mode")
	fl.BoolVar(&o.ArbitraryUID, "arbitrary-uid", false, "--restricted without a UID or GID of the sidecar's own: the platform assigns them (OpenShift's restricted-v2)")
}

// Validate checks the values that parse (the rest is inject's, which
// checks them as the API server would).
func (o *SidecarOptions) Validate() error {
	if err := o.Repository.Validate(); err != nil {
		return UsageError(err)
	}
	if o.Image != "" {
		if err := CheckReference("--image", o.Image); err != nil {
			return UsageError(err)
		}
	}
	if o.HTTPTimeout <= 0 {
		return Usagef("--http-timeout %s: want a positive duration", o.HTTPTimeout)
	}
	if o.Port < 1 || o.Port > 65535 {
		return UsageError(fmt.Errorf("--port %d: want 1 to 65535", o.Port))
	}
	return nil
}

// InjectOptions are package inject's options from the flags (after
// Validate).
func (o *SidecarOptions) InjectOptions() []inject.Option {
	// Never fails: a bare registry takes inject.DefaultRepository's name.
	repo, _ := o.Repository.Resolve(inject.DefaultRepository)
	opts := []inject.Option{
		inject.WithName(o.Name), inject.WithPort(o.Port), inject.WithPasswordSecret(o.SecretName, o.SecretKey),
		inject.WithRepository(repo), inject.WithResources(o.Requests, o.Limits),
	}
	if o.Image != "" {
		opts = append(opts, inject.WithImage(o.Image))
	} else if !o.NoResolve {
		opts = append(opts, inject.WithTagLister(inject.RegistryResolver{Timeout: o.HTTPTimeout}))
	}
	if o.AllowHostPath {
		opts = append(opts, inject.WithAllowHostPath())
	}
	if o.PullSecret != "" {
		opts = append(opts, inject.WithImagePullSecret(o.PullSecret))
	}
	switch {
	case o.ArbitraryUID:
		opts = append(opts, inject.WithArbitraryUID())
	case o.Restricted:
		opts = append(opts, inject.WithRestricted())
	}
	return opts
}
