package options

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/pflag"

	"github.com/imagectl/imagectl/build"
	"github.com/imagectl/imagectl/build/dockerdriver"
	"github.com/imagectl/imagectl/catalog"
	"github.com/imagectl/imagectl/cmd/imagectl/app/options/base"
	"github.com/imagectl/imagectl/extensions"
	"github.com/imagectl/imagectl/extensions/marketplace"
	"github.com/imagectl/imagectl/extensions/openvsx"
	"github.com/imagectl/imagectl/internal/sourcedate"
	"github.com/imagectl/imagectl/matrix"
	"github.com/imagectl/imagectl/regauth"
	"github.com/imagectl/imagectl/sbom"
	"github.com/imagectl/imagectl/sign"
	"github.com/imagectl/imagectl/verify"
)

// RegistryOptions say how a verb talks to image registries. Credentials
// always come from the Docker config (DOCKER_CONFIG, else ~/.docker;
// docker login); localhost and 127.0.0.1 are always spoken to over plain
// HTTP.
type RegistryOptions struct {
	// Insecure allows plain HTTP to any registry.
	Insecure bool
	// Usage overrides the help of --insecure.
	Usage string
}

var _ Options = (*RegistryOptions)(nil)

func (o *RegistryOptions) AddFlags(fl *pflag.FlagSet) {
	usage := o.Usage
	if usage == "" {
		usage = "allow plain HTTP to the registry (automatic for localhost and 127.0.0.1)"
	}
	fl.BoolVar(&o.Insecure, "insecure", false, usage)
}

func (o *RegistryOptions) Validate() error { return nil }

// NameOptions are the go-containerregistry name options of the flags.
func (o *RegistryOptions) NameOptions() []name.Option {
	if o.Insecure {
		return []name.Option{name.Insecure}
	}
	return nil
}

// RemoteOptions authenticate with the Docker config over regauth's guarded
// transport and name imagectl as the user agent.
func (o *RegistryOptions) RemoteOptions() []remote.Option {
	return []remote.Option{remote.WithAuthFromKeychain(regauth.Keychain()), remote.WithTransport(regauth.Transport(nil)), remote.WithUserAgent("imagectl/" + Version())}
}

// KeyOptions name a cosign key pair: the private key that signs, the file
// holding its password, and (where a verb checks what it signed) the
// public key.
type KeyOptions struct {
	Key          string
	PasswordFile string
	VerifyKey    string

	KeyUsage       string // help of --key
	KeyEnv         string // the environment variable --key falls back to, if any
	VerifyKeyUsage string // help of --verify-key; empty: no such flag
}

var _ Options = (*KeyOptions)(nil)

func (o *KeyOptions) AddFlags(fl *pflag.FlagSet) {
	fl.StringVar(&o.Key, "key", "", o.KeyUsage)
	if o.KeyEnv != "" {
		BindEnv(fl, "key", o.KeyEnv)
	}
	fl.StringVar(&o.PasswordFile, "key-password-file", "", "file holding the key password (default: env "+sign.PasswordEnv+")")
	if o.VerifyKeyUsage != "" {
		fl.StringVar(&o.VerifyKey, "verify-key", "", o.VerifyKeyUsage)
	}
}

func (o *KeyOptions) Validate() error { return nil }

// Password is where the key password comes from: --key-password-file, else
// COSIGN_PASSWORD; with neither, the error names both.
func (o *KeyOptions) Password() sign.Password {
	if o.PasswordFile != "" {
		return sign.PasswordFromFile(o.PasswordFile)
	}
	env := sign.PasswordFromEnv()
	return func() ([]byte, error) {
		pw, err := env()
		if err != nil {
			return nil, fmt.Errorf("no key password: set %s (%s= for none), or pass --key-password-file FILE", sign.PasswordEnv, sign.PasswordEnv)
		}
		return pw, nil
	}
}

// CertificateOptions are the keyless signer identity a verb accepts: exact
// values or regular expressions, as cosign verify takes them.
type CertificateOptions struct {
	Identity, IdentityRegexp     string
	OIDCIssuer, OIDCIssuerRegexp string
}

var _ Options = (*CertificateOptions)(nil)

func (o *CertificateOptions) AddFlags(fl *pflag.FlagSet) {
	fl.StringVar(&o.Identity, "certificate-identity", "", "keyless: the signer identity (e.g. the workflow URL)")
	fl.StringVar(&o.IdentityRegexp, "certificate-identity-regexp", "", "keyless: a regular expression for the signer identity")
	fl.StringVar(&o.OIDCIssuer, "certificate-oidc-issuer", "", "keyless: the OIDC issuer (https://token.actions.githubusercontent.com)")
	fl.StringVar(&o.OIDCIssuerRegexp, "certificate-oidc-issuer-regexp", "", "keyless: a regular expression for the OIDC issuer")
}

// Validate refuses half an identity, and a regular expression given as an
// exact value: --certificate-identity and --certificate-oidc-issuer are
// matched exactly (as cosign matches them), so a pattern passed to them
// fails here, at once, instead of at the verify after the build.
func (o *CertificateOptions) Validate() error {
	for _, f := range []struct{ flag, v string }{{"certificate-identity", o.Identity}, {"certificate-oidc-issuer", o.OIDCIssuer}} {
		if strings.ContainsAny(f.v, `^$\`) {
			return fmt.Errorf("--%s %q looks like a regular expression: it is matched exactly; use --%s-regexp", f.flag, f.v, f.flag)
		}
	}
	if o.Set() && !o.Complete() {
		return fmt.Errorf("keyless verification needs an identity (--certificate-identity[-regexp]) and an OIDC issuer (--certificate-oidc-issuer[-regexp])")
	}
	return nil
}

// Set reports whether any of the flags is given.
func (o *CertificateOptions) Set() bool {
	return o.Identity != "" || o.IdentityRegexp != "" || o.OIDCIssuer != "" || o.OIDCIssuerRegexp != ""
}

// Complete reports whether an identity and an issuer are given.
func (o *CertificateOptions) Complete() bool {
	return (o.Identity != "" || o.IdentityRegexp != "") && (o.OIDCIssuer != "" || o.OIDCIssuerRegexp != "")
}

// VerifyOption accepts the identity.
func (o *CertificateOptions) VerifyOption() verify.Option {
	return verify.WithKeylessIdentity(verify.Identity{Subject: o.Identity, SubjectRegExp: o.IdentityRegexp, Issuer: o.OIDCIssuer, IssuerRegExp: o.OIDCIssuerRegexp})
}

// OutputOptions are -o/--output of a verb that prints results.
type OutputOptions = base.OutputOptions

// NewOutputOptions takes the formats a verb prints, its default first.
func NewOutputOptions(formats ...string) OutputOptions { return base.NewOutputOptions(formats...) }

// CheckOutput refuses an -o value not among allowed (exit 2).
func CheckOutput(v string, allowed ...string) error { return base.CheckOutput(v, allowed...) }

// OrList is "a", "a or b", "a, b or c".
func OrList(s []string) string { return base.OrList(s) }

// BuildKitOptions say which buildkitd solves each platform.
type BuildKitOptions struct {
	Addr     string
	Driver   string
	Builders []string
}

var _ Options = (*BuildKitOptions)(nil)

const (
	driverRemote          = "remote"
	driverDockerContainer = "docker-container"
)

func (o *BuildKitOptions) AddFlags(fl *pflag.FlagSet) {
	fl.StringVar(&o.Addr, "buildkit-addr", "", "buildkitd address (default "+build.DefaultAddress+")")
	BindEnv(fl, "buildkit-addr", "BUILDKIT_HOST")
	fl.StringVar(&o.Driver, "driver", driverRemote, "remote (connect to --buildkit-addr) or docker-container (start a moby/buildkit container)")
	fl.StringArrayVar(&o.Builders, "builder", nil, "PLATFORM=ADDR: build that platform on another buildkitd (repeatable)")
}

func (o *BuildKitOptions) Validate() error {
	switch o.Driver {
	case driverRemote:
	case driverDockerContainer:
		if o.Addr != "" {
			return fmt.Errorf("--driver docker-container starts its own buildkitd; drop --buildkit-addr/BUILDKIT_HOST")
		}
	default:
		return fmt.Errorf("--driver %q: want remote or docker-container", o.Driver)
	}
	for _, b := range o.Builders {
		p, a, ok := strings.Cut(b, "=")
		if !ok || p == "" || a == "" {
			return fmt.Errorf("--builder %q: want PLATFORM=ADDRESS, e.g. linux/arm64=tcp://arm64-host:1234", b)
		}
		if !strings.HasPrefix(p, "linux/") {
			return fmt.Errorf("--builder %q: platform must look like linux/arm64", b)
		}
	}
	return nil
}

// BuildKit maps the flags onto a build.BuildKit; with docker-container it
// starts (or reuses) the moby/buildkit container.
func (o *BuildKitOptions) BuildKit(ctx context.Context) (*build.BuildKit, error) {
	if err := o.Validate(); err != nil {
		return nil, UsageError(err)
	}
	addr := o.Addr
	if o.Driver == driverDockerContainer {
		a, err := dockerdriver.Ensure(ctx, "imagectl-buildkit", "")
		if err != nil {
			return nil, err
		}
		addr = a
	}
	opts := []build.BuildKitOption{build.WithAddress(addr)}
	for _, b := range o.Builders {
		p, a, _ := strings.Cut(b, "=")
		opts = append(opts, build.WithBuilder(p, a))
	}
	return build.NewBuildKit(opts...), nil
}

// ImageOptions are what build and release put into (and alongside) the
// image besides the definition: the registry cache, BuildKit's progress
// display, provenance, the signed SBOM, the timestamps and the revision.
type ImageOptions struct {
	CacheFrom, CacheTo []string
	Progress           string
	Provenance         bool
	SBOMFormat         string
	SBOMFromLock       bool
	SBOMScanner        string
	SourceDateEpoch    string
	Revision           string
}

var _ Options = (*ImageOptions)(nil)

func (o *ImageOptions) AddFlags(fl *pflag.FlagSet) {
	fl.StringArrayVar(&o.CacheFrom, "cache-from", nil, "registry cache to import, REGISTRY/NAME[:TAG] (a per-platform suffix is added)")
	fl.StringArrayVar(&o.CacheTo, "cache-to", nil, "registry cache to export (mode=max), REGISTRY/NAME[:TAG]")
	fl.StringVar(&o.Progress, "progress", "auto", "BuildKit progress: auto, tty, plain or quiet (on stderr)")
	fl.BoolVar(&o.Provenance, "provenance", true, "attach buildkitd's SLSA provenance to each platform manifest (as an OCI referrer)")
	fl.StringVar(&o.SBOMFormat, "sbom-format", sbom.FormatSPDX, "format of the signed SBOM scanned from each platform image with syft: spdx (SPDX 2.3) or cyclonedx")
	fl.BoolVar(&o.SBOMFromLock, "sbom-from-lock", false, "sign an SBOM written from the lock instead of scanning each platform image")
	fl.StringVar(&o.SBOMScanner, "sbom-scanner", "", "the SBOM scanner, imagectl-sbom, that scans each platform image (default: the one beside imagectl, else on PATH)")
	BindEnv(fl, "sbom-scanner", sbom.ScannerEnv)
	fl.StringVar(&o.SourceDateEpoch, "source-date-epoch", "", "Unix time for every timestamp in the image (default: env SOURCE_DATE_EPOCH, else the git commit time, else 0)")
	fl.StringVar(&o.Revision, "revision", "", "source revision label (default: git rev-parse HEAD)")
}

func (o *ImageOptions) Validate() error {
	if o.SourceDateEpoch != "" {
		if _, err := sourcedate.Parse("--source-date-epoch", o.SourceDateEpoch); err != nil {
			return err
		}
	}
	switch o.Progress {
	case "auto", "tty", "plain", "quiet", "rawjson":
	default:
		return fmt.Errorf("--progress %q: want auto, tty, plain or quiet", o.Progress)
	}
	if o.SBOMFormat != sbom.FormatSPDX && o.SBOMFormat != sbom.FormatCycloneDX {
		return fmt.Errorf("--sbom-format %q: want %s or %s", o.SBOMFormat, sbom.FormatSPDX, sbom.FormatCycloneDX)
	}
	return nil
}

// Scanner is the SBOM scanner a signing build runs (--sbom-scanner, else
// the one sbom.Find finds); nil, with no error, when it signs the SBOM
// written from the lock (--sbom-from-lock) or does not sign. A scanner
// that cannot be found is an error before any work.
func (o *ImageOptions) Scanner(signs bool) (*sbom.Command, error) {
	if !signs || o.SBOMFromLock {
		return nil, nil
	}
	return sbom.NewCommand(o.SBOMScanner)
}

// UpstreamOptions override the extension galleries of matrix.yaml's
// upstreams.
type UpstreamOptions struct {
	Marketplace, OpenVSX string
}

var _ Options = (*UpstreamOptions)(nil)

func (o *UpstreamOptions) AddFlags(fl *pflag.FlagSet) {
	fl.StringVar(&o.Marketplace, "marketplace-url", "", "VS Marketplace base URL (default matrix.yaml upstreams.marketplace)")
	BindEnv(fl, "marketplace-url", "IMAGECTL_MARKETPLACE_URL")
	fl.StringVar(&o.OpenVSX, "openvsx-url", "", "Open VSX base URL (default matrix.yaml upstreams.openvsx)")
	BindEnv(fl, "openvsx-url", "IMAGECTL_OPENVSX_URL")
}

func (o *UpstreamOptions) Validate() error { return nil }

// MarketplaceURL and OpenVSXURL are the flag (or its environment variable),
// else matrix.yaml.
func (o *UpstreamOptions) MarketplaceURL(cfg *matrix.Config) string {
	return FirstNonEmpty(o.Marketplace, cfg.Upstreams.Marketplace)
}

func (o *UpstreamOptions) OpenVSXURL(cfg *matrix.Config) string {
	return FirstNonEmpty(o.OpenVSX, cfg.Upstreams.OpenVSX)
}

// ExtensionSources are the Marketplace and Open VSX clients, the one pair
// every verb that reads the galleries uses: extensions fetch and pin, build
// and release download through Fetch, matrix refresh lists versions
// through Catalog.
type ExtensionSources struct {
	Marketplace *marketplace.Client
	OpenVSX     *openvsx.Client
}

// ExtensionSources is the one constructor of the gallery clients: each base
// URL is the flag (or its environment variable), else matrix.yaml's
// upstreams; every request goes through hc.
func (o *UpstreamOptions) ExtensionSources(cfg *matrix.Config, hc *http.Client) ExtensionSources {
	return ExtensionSources{
		Marketplace: marketplace.New(marketplace.WithHTTPClient(hc), marketplace.WithBaseURL(o.MarketplaceURL(cfg))),
		OpenVSX:     openvsx.New(openvsx.WithHTTPClient(hc), openvsx.WithBaseURL(o.OpenVSXURL(cfg))),
	}
}

// Fetch names the clients by matrix.yaml source, for extensions.Fetcher
// and the build pipeline.
func (s ExtensionSources) Fetch() map[string]extensions.Source {
	return map[string]extensions.Source{matrix.SourceMarketplace: s.Marketplace, matrix.SourceOpenVSX: s.OpenVSX}
}

// Catalog names the clients by matrix.yaml source, for catalog.Refresh.
func (s ExtensionSources) Catalog() map[string]catalog.ExtensionSource {
	return map[string]catalog.ExtensionSource{matrix.SourceMarketplace: s.Marketplace, matrix.SourceOpenVSX: s.OpenVSX}
}

// DefinitionOptions override matrix.yaml's build: section and
// upstreams.packageIndex. build, plan and release register the same flags
// and hand them to build.NewDefinition, so all three compute the same inputs
// digest.
type DefinitionOptions struct {
	toolsImage    string
	packageIndex  string
	pythonRuntime string
	standaloneURL string
	standaloneSHA []string
}

var _ Options = (*DefinitionOptions)(nil)

func (o *DefinitionOptions) AddFlags(fl *pflag.FlagSet) {
	fl.StringVar(&o.toolsImage, "tools-image", "", "override matrix.yaml build.toolsImage and the catalog's digest for it: the build-platform image with python3 and pip that cross-installs the wheels, used as given (pin it: NAME@sha256:...)")
	BindEnv(fl, "tools-image", "IMAGECTL_TOOLS_IMAGE")
	AddPackageIndexFlag(fl, &o.packageIndex, "override matrix.yaml upstreams.packageIndex: the PEP 503 index for pip")
	fl.StringVar(&o.pythonRuntime, "python-runtime", "", "override matrix.yaml build.pythonRuntime: standalone (python-build-standalone, unpacked on the build platform) or base (the base image's own python3)")
	fl.StringVar(&o.standaloneURL, "python-standalone-url", "", "override matrix.yaml build.standalone for the set's Python: install_only .tar.gz URL, {arch} becomes x86_64 or aarch64 (needs --python-standalone-sha256)")
	BindEnv(fl, "python-standalone-url", "IMAGECTL_PYTHON_STANDALONE_URL")
	fl.StringArrayVar(&o.standaloneSHA, "python-standalone-sha256", nil, "ARCH=HEX sha256 of each --python-standalone-url tarball (x86_64=..., aarch64=...)")
}

// AddPackageIndexFlag registers --package-index, the one name (and
// environment variable) of the PEP 503 index on every verb.
func AddPackageIndexFlag(fl *pflag.FlagSet, p *string, usage string) {
	fl.StringVar(p, "package-index", "", usage)
	BindEnv(fl, "package-index", "IMAGECTL_PACKAGE_INDEX")
}

func (o *DefinitionOptions) Validate() error {
	if u, err := url.Parse(o.packageIndex); err == nil && u.User != nil {
		u.User = nil
		return fmt.Errorf("--package-index %s: the URL carries credentials (user:password@ before the host), which the build would record in the image; give the index without them", u)
	}
	_, err := o.standaloneSHA256()
	return err
}

func (o *DefinitionOptions) standaloneSHA256() (map[string]string, error) {
	var m map[string]string
	for _, kv := range o.standaloneSHA {
		arch, sum, ok := strings.Cut(kv, "=")
		if !ok || (arch != "x86_64" && arch != "aarch64") {
			return nil, fmt.Errorf("--python-standalone-sha256 %q: want x86_64=HEX or aarch64=HEX", kv)
		}
		if m == nil {
			m = map[string]string{}
		}
		m[arch] = sum
	}
	return m, nil
}

// Definition maps the flags onto build.NewDefinition.
func (o *DefinitionOptions) Definition(cfg *matrix.Config) (*build.Definition, error) {
	sums, err := o.standaloneSHA256()
	if err != nil {
		return nil, UsageError(err)
	}
	return build.NewDefinition(cfg, build.Overrides{ToolsImage: o.toolsImage, PackageIndex: o.packageIndex, PythonRuntime: o.pythonRuntime, StandaloneURL: o.standaloneURL, StandaloneSHA256: sums}, Version())
}

// RepositoryOptions are --repository, where the images are published (and,
// for inject and debug, taken from): REGISTRY/NAME, or a bare REGISTRY
// (HOST[:PORT], or a host with a dot, or localhost) that replaces only the
// registry of matrix.yaml's first repository (inject.DefaultRepository for
// inject and debug).
type RepositoryOptions struct {
	Repository string
	Usage      string // help; empty: publishing
	Default    string // default value
}

var _ Options = (*RepositoryOptions)(nil)

func (o *RepositoryOptions) AddFlags(fl *pflag.FlagSet) {
	usage := o.Usage
	if usage == "" {
		usage = "where images are published: REGISTRY/NAME, or REGISTRY alone (HOST[:PORT]) to keep matrix.yaml's name (default: matrix.yaml's first repository)"
	}
	fl.StringVar(&o.Repository, "repository", o.Default, usage)
	BindEnv(fl, "repository", "IMAGECTL_REPOSITORY")
}

func (o *RepositoryOptions) Validate() error {
	switch {
	case o.Repository == "":
		return nil
	case strings.Contains(o.Repository, "/"):
		return CheckRepository("repository", o.Repository)
	case !strings.ContainsAny(o.Repository, ".:") && o.Repository != "localhost":
		// go-containerregistry reads "myreg/NAME" as the Docker Hub
		// namespace myreg: a registry needs a dot, a port or localhost.
		return fmt.Errorf("--repository %q: one name with no dot, no port and not localhost is no registry (it would be read as docker.io/%s/...): give REGISTRY/NAME, a registry such as registry.example or HOST:PORT, or, for Docker Hub, docker.io/%s/NAME", o.Repository, o.Repository, o.Repository)
	default:
		if _, err := name.NewRegistry(o.Repository, name.StrictValidation); err != nil {
			return fmt.Errorf("--repository %q: %w (want REGISTRY/NAME or HOST[:PORT])", o.Repository, err)
		}
		return nil
	}
}

// Resolve applies --repository to repo (matrix.yaml's first repository, or
// ""): the flag's REGISTRY/NAME, or repo on the flag's registry.
func (o *RepositoryOptions) Resolve(repo string) (string, error) {
	if o.Repository == "" || strings.Contains(o.Repository, "/") {
		return cmp.Or(o.Repository, repo), nil
	}
	if repo == "" {
		return "", fmt.Errorf("--repository %s names a registry only, and matrix.yaml lists no image.repositories to take the name from: give REGISTRY/NAME", o.Repository)
	}
	r, err := name.NewRepository(repo)
	if err != nil {
		return "", fmt.Errorf("image repository %q: %w", repo, err)
	}
	return o.Repository + "/" + r.RepositoryStr(), nil
}
