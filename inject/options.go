package inject

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/imagectl/imagectl/imagespec"
)

// Defaults of what inject writes.
const (
	DefaultName       = "code-server"
	DefaultPort       = imagespec.CodeServerPort
	DefaultSecretName = "code-server-password"
	DefaultSecretKey  = "password"
	// DefaultVolume names the /tmp/ray emptyDir when the manifest has none:
	// the name KubeRay gives the /tmp/ray emptyDir it mounts in its
	// autoscaler container (ray-operator common/pod.go, RayLogVolumeName),
	// so the head, the sidecar and the autoscaler share one volume.
	DefaultVolume = "ray-logs"
	// PortName names the sidecar's port.
	PortName = "code-server"
	// RayTmp is where Ray writes its session (logs, runtime_resources) and
	// where the debugger extension looks for the code of a paused task.
	RayTmp = "/tmp/ray"
	// Workspace is the folder code-server opens: the working_dir of the job.
	Workspace = "/tmp/ray/session_latest/runtime_resources"
	// ImageDashboard is the dashboard address baked into the image's
	// debugger settings (matrix.yaml settings:): the head's own dashboard,
	// seen from a sidecar in the same pod.
	ImageDashboard = "127.0.0.1:8265"
	// DefaultRayDashboardPort is Ray's dashboard port unless
	// rayStartParams.dashboard-port says otherwise.
	DefaultRayDashboardPort = 8265
)

// DefaultRequests and DefaultLimits are the sidecar's resources; each
// resource WithResources gives replaces (or drops) one of them.
var (
	DefaultRequests = map[string]string{"cpu": "500m", "memory": "1Gi"}
	DefaultLimits   = map[string]string{"cpu": "2", "memory": "4Gi"}
)

// Resolver pins an image reference to a digest (repo:tag@sha256:...).
type Resolver interface {
	Resolve(ctx context.Context, ref string) (string, error)
}

// Option configures Apply.
type Option func(*config)

type config struct {
	image      string
	repository string
	resolver   Resolver
	name       string
	port       int
	secretName string
	secretKey  string
	rotate     bool
	random     io.Reader
	requests   map[string]string
	limits     map[string]string
	dashboard  string
	pullSecret string
	helmValues bool
	// allowHostPath lets the sidecar share a hostPath /tmp/ray volume.
	allowHostPath bool
	// keepUnresolved keeps an image the registry says does not exist.
	keepUnresolved bool
	// restricted writes the sidecar PodSecurity "restricted" admits
	// (restricted.go); arbitraryUID leaves its UID and GID to the platform.
	restricted, arbitraryUID bool

	lister TagLister

	// State of one Apply: the PodSecurity enforce level of each Namespace
	// document of the input, the tags listed per repository, the notes.
	enforce map[string]string
	tags    map[string]tagList
	notes   []string
	// unchecked are Result.Unchecked.
	unchecked []string
	// The first document that holds anything, the one the kubectl ray
	// plugin reads (firstDocument).
	firstDoc     int
	firstDocDesc string
}

func newConfig(opts []Option) *config {
	c := &config{
		repository: DefaultRepository, name: DefaultName, port: DefaultPort,
		secretName: DefaultSecretName, secretKey: DefaultSecretKey, random: rand.Reader,
		requests: maps.Clone(DefaultRequests), limits: maps.Clone(DefaultLimits),
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// WithImage sets the sidecar image instead of the published image for the
// manifest's Ray version.
func WithImage(ref string) Option { return func(c *config) { c.image = ref } }

// WithRepository sets the repository the default image is taken from
// (default DefaultRepository); the tag is still the Ray line tag.
func WithRepository(repo string) Option { return func(c *config) { c.repository = repo } }

// WithTagLister looks up the published tags of the default image's
// repository with l: the sidecar gets the build for the manifest's Ray
// patch when it is published, else the newest build for its minor, and an
// error when the minor has none. Without it, or when l fails, the sidecar
// gets the floating minor tag (ray2.46). Result.Notes says which and why.
func WithTagLister(l TagLister) Option { return func(c *config) { c.lister = l } }

// WithResolver pins the image to a digest with r. When r says the image
// does not exist (an error wrapping ErrImageNotFound), Apply fails unless
// WithKeepUnresolved; when r fails otherwise, the image stays as it is and
// the failure is a warning.
func WithResolver(r Resolver) Option { return func(c *config) { c.resolver = r } }

// WithKeepUnresolved keeps the image by tag, with a warning, when the
// resolver says it does not exist.
func WithKeepUnresolved() Option { return func(c *config) { c.keepUnresolved = true } }

// WithAllowHostPath lets the sidecar share the Ray container's /tmp/ray
// when it is a hostPath volume (the node's directory then opens in the web
// IDE); without it, that is an error.
func WithAllowHostPath() Option { return func(c *config) { c.allowHostPath = true } }

// WithName sets the sidecar container's name (default code-server).
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithPort sets the sidecar's port (default 8443).
func WithPort(port int) Option { return func(c *config) { c.port = port } }

// WithPasswordSecret names the Secret and key the code-server PASSWORD is
// read from (default code-server-password, password).
func WithPasswordSecret(name, key string) Option {
	return func(c *config) { c.secretName, c.secretKey = name, key }
}

// WithRotatePassword makes PasswordSecret draw a new password even when
// the existing Secret has one.
func WithRotatePassword() Option { return func(c *config) { c.rotate = true } }

// WithRandom sets where PasswordSecret's passwords come from (default
// crypto/rand).
func WithRandom(r io.Reader) Option { return func(c *config) { c.random = r } }

// WithResources sets the sidecar's requests and limits ("cpu", "memory",
// "example.com/gpu", ...: Kubernetes quantities). Each resource given
// replaces that one of DefaultRequests or DefaultLimits, the others stay;
// an empty value drops it ("cpu": "" leaves no cpu limit). Apply refuses
// what the API server would: a name no container may have, a negative
// quantity, a fractional extended resource, a request above its limit.
func WithResources(requests, limits map[string]string) Option {
	return func(c *config) {
		c.requests = mergeResources(c.requests, requests)
		c.limits = mergeResources(c.limits, limits)
	}
}

// WithDashboard sets the dashboard address (host:port) written into the
// debugger settings. Default: 127.0.0.1 and the head's dashboard-port.
func WithDashboard(addr string) Option { return func(c *config) { c.dashboard = addr } }

// WithImagePullSecret adds a Secret of that name to the head pod's
// imagePullSecrets (a private registry).
func WithImagePullSecret(name string) Option { return func(c *config) { c.pullSecret = name } }

// WithHelmValues reads and writes a values file of KubeRay's ray-cluster
// Helm chart (head.sidecarContainers, head.volumes, head.volumeMounts)
// instead of Kubernetes manifests.
func WithHelmValues() Option { return func(c *config) { c.helmValues = true } }

// ErrInvalidOption wraps every error about an option's value.
var ErrInvalidOption = errors.New("invalid option")

func (c *config) validate() error {
	if err := c.check(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	return nil
}

func (c *config) check() error {
	// Names and keys as the API server checks them (k8s.io/apimachinery's
	// validation): a container name is a DNS label, a Secret name a DNS
	// subdomain, a Secret key what IsConfigMapKey accepts.
	switch {
	case len(validation.IsDNS1123Label(c.name)) > 0:
		return fmt.Errorf("sidecar name %q: expected a DNS label (lower case letters, digits and '-', at most 63): %s", c.name, strings.Join(validation.IsDNS1123Label(c.name), "; "))
	case c.port < 1 || c.port > 65535:
		return fmt.Errorf("port %d: expected 1-65535", c.port)
	case len(validation.IsDNS1123Subdomain(c.secretName)) > 0:
		return fmt.Errorf("password secret name %q: expected a Secret name (lower case letters, digits, '-' and '.', at most 253): %s", c.secretName, strings.Join(validation.IsDNS1123Subdomain(c.secretName), "; "))
	case len(validation.IsConfigMapKey(c.secretKey)) > 0:
		return fmt.Errorf("password secret key %q: expected a Secret key (letters, digits, '-', '_' or '.', at most 253, not \".\", \"..\" nor starting with \"..\"): %s", c.secretKey, strings.Join(validation.IsConfigMapKey(c.secretKey), "; "))
	case c.pullSecret != "" && len(validation.IsDNS1123Subdomain(c.pullSecret)) > 0:
		return fmt.Errorf("image pull secret %q: expected a Secret name (lower case letters, digits, '-' and '.', at most 253): %s", c.pullSecret, strings.Join(validation.IsDNS1123Subdomain(c.pullSecret), "; "))
	}
	if c.image != "" {
		if _, err := name.ParseReference(c.image, name.WeakValidation); err != nil {
			return fmt.Errorf("image %q: expected an image reference (registry/repository:tag or @sha256:...): %w", c.image, err)
		}
	}
	if _, err := name.NewRepository(c.repository); err != nil {
		return fmt.Errorf("repository %q: expected an image repository (registry/path): %w", c.repository, err)
	}
	if err := checkResources(c.requests, c.limits); err != nil {
		return err
	}
	if c.dashboard != "" {
		host, port, err := net.SplitHostPort(c.dashboard)
		if p, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || p < 1 || p > 65535 {
			return fmt.Errorf("dashboard %q: expected host:port, e.g. 127.0.0.1:8265", c.dashboard)
		}
	}
	return nil
}
