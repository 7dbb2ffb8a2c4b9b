package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	bootstrap "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	// The typed_config types the snippets name, for protojson's Any.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"

	"github.com/rlstore/rlstore/gateway/rlsconfig"
)

// There is no Kubernetes, Envoy, Istio, Contour, Emissary or Envoy Gateway
// here. TestGatewayDocSnippets checks docs/gateway.md's snippets as far as
// that allows: every Envoy configuration in them (the bootstrap, the
// filters and routes the controllers' resources carry) is decoded strictly
// into go-control-plane's types (an unknown or misspelt field, a wrong
// type or enum fails) and validated with their protoc-gen-validate rules;
// the controllers' resources are decoded strictly into mirrors of the
// fields they use, and checked against each other (names, namespaces,
// ports, domain, descriptor key); rlstore's configurations load; and every
// rlstore flag the page names is one the binary defines.

// docSnippets are the page's yaml blocks.
func docSnippets(t *testing.T) []string {
	page, err := os.ReadFile("../../docs/gateway.md")
	require.NoError(t, err)
	var out []string
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(page, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

// yamlDocs decodes each YAML document of s into JSON.
func yamlDocs(t *testing.T, s string) [][]byte {
	dec := yaml.NewDecoder(strings.NewReader(s))
	var out [][]byte
	for {
		var v any
		err := dec.Decode(&v)
		if err == io.EOF {
			return out
		}
		require.NoError(t, err, "%s", s)
		b, err := json.Marshal(v)
		require.NoError(t, err)
		out = append(out, b)
	}
}

// strictJSON decodes b into v, failing on a field v does not have.
func strictJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	require.NoError(t, d.Decode(v), "%s", b)
}

// envoyJSON decodes b into m as Envoy would read it, and validates it.
func envoyJSON(t *testing.T, b []byte, m proto.Message) {
	t.Helper()
	require.NoError(t, protojson.Unmarshal(b, m), "%T: %s", m, b)
	if v, ok := m.(interface{ ValidateAll() error }); ok {
		require.NoError(t, v.ValidateAll(), "%T: %s", m, b)
	}
}

// k8sObject is a Kubernetes resource's envelope; spec is decoded by kind.
type k8sObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec json.RawMessage `json:"spec"`
}

type descriptorEntry struct {
	RemoteAddress *struct{} `json:"remoteAddress"`
}

// What the snippets say of rlstore, gathered as they are read.
type snippetFacts struct {
	domains     []string // every domain a gateway sends
	serviceName string   // the rlstore Service: name.namespace:port
	servicePort int
	configs     int // rlstore configurations loaded
	envoyFilter int // Envoy configurations decoded
}

func TestGatewayDocSnippets(t *testing.T) {
	var f snippetFacts
	for _, s := range docSnippets(t) {
		for _, doc := range yamlDocs(t, s) {
			f.check(t, s, doc)
		}
	}
	assert.Equal(t, 2, f.configs, "rlstore configurations")
	assert.Equal(t, 6, f.envoyFilter, "Envoy configurations: the bootstrap, the EnvoyFilter's two patches, the EnvoyPatchPolicy's three")
	require.NotEmpty(t, f.domains)
	for _, d := range f.domains {
		assert.Equal(t, "api", d, "every gateway sends the domain the configuration defines")
	}
}

func (f *snippetFacts) check(t *testing.T, src string, doc []byte) {
	var top map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(doc, &top))
	switch {
	case top["static_resources"] != nil:
		var b bootstrap.Bootstrap
		envoyJSON(t, doc, &b)
		f.envoyFilter++
		f.checkBootstrap(t, &b)
	case top["domain"] != nil:
		_, err := rlsconfig.Load([]rlsconfig.Source{{Name: "doc.yaml", Data: []byte(src)}})
		require.NoError(t, err, "%s", src)
		f.configs++
	case top["rateLimitService"] != nil: // Contour's configuration file
		var c struct {
			RateLimitService struct {
				ExtensionService        string `json:"extensionService"`
				Domain                  string `json:"domain"`
				FailOpen                bool   `json:"failOpen"`
				EnableXRateLimitHeaders bool   `json:"enableXRateLimitHeaders"`
			} `json:"rateLimitService"`
		}
		strictJSON(t, doc, &c)
		assert.Equal(t, "rlstore/rlstore", c.RateLimitService.ExtensionService, "namespace/name of the ExtensionService")
		f.domains = append(f.domains, c.RateLimitService.Domain)
	case top["spec"] != nil && top["apiVersion"] == nil: // an HTTPProxy's spec
		var p struct {
			Spec struct {
				Virtualhost struct {
					FQDN            string `json:"fqdn"`
					RateLimitPolicy struct {
						Global struct {
							Descriptors []struct {
								Entries []descriptorEntry `json:"entries"`
							} `json:"descriptors"`
						} `json:"global"`
					} `json:"rateLimitPolicy"`
				} `json:"virtualhost"`
			} `json:"spec"`
		}
		strictJSON(t, doc, &p)
		require.NotNil(t, p.Spec.Virtualhost.RateLimitPolicy.Global.Descriptors[0].Entries[0].RemoteAddress)
	default:
		var o k8sObject
		strictJSON(t, doc, &o)
		f.checkObject(t, o)
	}
}

// checkBootstrap checks the Envoy configuration: the filter asks the
// rlstore cluster, over HTTP/2, for the domain.
func (f *snippetFacts) checkBootstrap(t *testing.T, b *bootstrap.Bootstrap) {
	var m hcm.HttpConnectionManager
	require.NoError(t, b.StaticResources.Listeners[0].FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(&m))
	f.checkFilter(t, m.HttpFilters[0], "rlstore")
	var c *cluster.Cluster
	for _, x := range b.StaticResources.Clusters {
		if x.Name == "rlstore" {
			c = x
		}
	}
	require.NotNil(t, c, "the rlstore cluster")
	assert.Contains(t, c.TypedExtensionProtocolOptions, "envoy.extensions.upstreams.http.v3.HttpProtocolOptions", "HTTP/2 to rlstore")
	assert.NotEmpty(t, m.GetRouteConfig().GetVirtualHosts()[0].GetRateLimits(), "a route sends descriptors")
}

// checkFilter checks an envoy.filters.http.ratelimit filter.
func (f *snippetFacts) checkFilter(t *testing.T, h *hcm.HttpFilter, clusterName string) {
	require.Equal(t, "envoy.filters.http.ratelimit", h.Name)
	var rl struct {
		Domain           string `json:"domain"`
		RateLimitService struct {
			GrpcService struct {
				EnvoyGrpc struct {
					ClusterName string `json:"clusterName"`
				} `json:"envoyGrpc"`
			} `json:"grpcService"`
			TransportAPIVersion string `json:"transportApiVersion"`
		} `json:"rateLimitService"`
	}
	msg, err := h.GetTypedConfig().UnmarshalNew()
	require.NoError(t, err)
	b, err := protojson.Marshal(msg)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rl))
	assert.Equal(t, clusterName, rl.RateLimitService.GrpcService.EnvoyGrpc.ClusterName)
	assert.Equal(t, "V3", rl.RateLimitService.TransportAPIVersion)
	f.domains = append(f.domains, rl.Domain)
}

func (f *snippetFacts) checkObject(t *testing.T, o k8sObject) {
	switch o.APIVersion + " " + o.Kind {
	case "v1 Service":
		var s struct {
			Selector map[string]string `json:"selector"`
			Ports    []struct {
				Name        string `json:"name"`
				Port        int    `json:"port"`
				TargetPort  int    `json:"targetPort"`
				AppProtocol string `json:"appProtocol"`
			} `json:"ports"`
		}
		strictJSON(t, o.Spec, &s)
		assert.Equal(t, "grpc", s.Ports[0].AppProtocol, "Istio speaks HTTP/2 to it")
		f.serviceName, f.servicePort = o.Metadata.Name+"."+o.Metadata.Namespace, s.Ports[0].Port
	case "networking.istio.io/v1alpha3 EnvoyFilter":
		f.checkEnvoyFilter(t, o.Spec)
	case "projectcontour.io/v1alpha1 ExtensionService":
		var s struct {
			Protocol string `json:"protocol"`
			Services []struct {
				Name string `json:"name"`
				Port int    `json:"port"`
			} `json:"services"`
			TimeoutPolicy struct {
				Response string `json:"response"`
			} `json:"timeoutPolicy"`
		}
		strictJSON(t, o.Spec, &s)
		assert.Contains(t, []string{"h2", "h2c"}, s.Protocol)
		assert.Equal(t, "rlstore/rlstore", o.Metadata.Namespace+"/"+o.Metadata.Name)
		assert.Equal(t, 8081, s.Services[0].Port)
	case "getambassador.io/v3alpha1 RateLimitService":
		var s struct {
			Service         string `json:"service"`
			ProtocolVersion string `json:"protocol_version"`
			Domain          string `json:"domain"`
			FailureModeDeny bool   `json:"failure_mode_deny"`
		}
		strictJSON(t, o.Spec, &s)
		assert.Equal(t, "rlstore.rlstore:8081", s.Service)
		assert.Equal(t, "v3", s.ProtocolVersion)
		f.domains = append(f.domains, s.Domain)
	case "getambassador.io/v3alpha1 Mapping":
		var s struct {
			Hostname string                                   `json:"hostname"`
			Prefix   string                                   `json:"prefix"`
			Service  string                                   `json:"service"`
			Labels   map[string][]map[string][]map[string]any `json:"labels"`
		}
		strictJSON(t, o.Spec, &s)
		require.NotEmpty(t, s.Labels["ambassador"])
	case "gateway.envoyproxy.io/v1alpha1 EnvoyPatchPolicy":
		f.checkPatchPolicy(t, o.Spec)
	default:
		t.Errorf("docs/gateway.md has a %s %s the test does not know: check it and add it", o.APIVersion, o.Kind)
	}
}

func (f *snippetFacts) checkEnvoyFilter(t *testing.T, spec []byte) {
	var s struct {
		WorkloadSelector struct {
			Labels map[string]string `json:"labels"`
		} `json:"workloadSelector"`
		ConfigPatches []struct {
			ApplyTo string         `json:"applyTo"`
			Match   map[string]any `json:"match"`
			Patch   struct {
				Operation string          `json:"operation"`
				Value     json.RawMessage `json:"value"`
			} `json:"patch"`
		} `json:"configPatches"`
	}
	strictJSON(t, spec, &s)
	for _, p := range s.ConfigPatches {
		switch p.ApplyTo {
		case "HTTP_FILTER":
			var h hcm.HttpFilter
			envoyJSON(t, p.Patch.Value, &h)
			f.checkFilter(t, &h, "outbound|8081||rlstore.rlstore.svc.cluster.local")
			assert.Equal(t, "INSERT_BEFORE", p.Patch.Operation)
		case "VIRTUAL_HOST":
			var v route.VirtualHost
			require.NoError(t, protojson.Unmarshal(p.Patch.Value, &v), "%s", p.Patch.Value) // a partial VirtualHost, merged: not valid alone
			assert.NotEmpty(t, v.RateLimits)
		default:
			t.Errorf("EnvoyFilter patch %s", p.ApplyTo)
		}
		f.envoyFilter++
	}
	assert.Equal(t, "rlstore.rlstore", f.serviceName, "the Service the EnvoyFilter's cluster names comes first")
	assert.Equal(t, 8081, f.servicePort)
}

func (f *snippetFacts) checkPatchPolicy(t *testing.T, spec []byte) {
	var s struct {
		TargetRef   map[string]string `json:"targetRef"`
		Type        string            `json:"type"`
		JSONPatches []struct {
			Type      string `json:"type"`
			Name      string `json:"name"`
			Operation struct {
				Op    string          `json:"op"`
				Path  string          `json:"path"`
				Value json.RawMessage `json:"value"`
			} `json:"operation"`
		} `json:"jsonPatches"`
	}
	strictJSON(t, spec, &s)
	assert.Equal(t, "JSONPatch", s.Type)
	for _, p := range s.JSONPatches {
		switch p.Type + " " + p.Operation.Path {
		case "type.googleapis.com/envoy.config.cluster.v3.Cluster ":
			var c cluster.Cluster
			envoyJSON(t, p.Operation.Value, &c)
			assert.Equal(t, p.Name, c.Name)
		case "type.googleapis.com/envoy.config.listener.v3.Listener /default_filter_chain/filters/0/typed_config/http_filters/0":
			var h hcm.HttpFilter
			envoyJSON(t, p.Operation.Value, &h)
			f.checkFilter(t, &h, "rlstore")
		case "type.googleapis.com/envoy.config.route.v3.RouteConfiguration /virtual_hosts/0/rate_limits":
			var list []json.RawMessage
			require.NoError(t, json.Unmarshal(p.Operation.Value, &list))
			for _, r := range list {
				var rl route.RateLimit
				envoyJSON(t, r, &rl)
			}
		default:
			t.Errorf("EnvoyPatchPolicy patch %s %s", p.Type, p.Operation.Path)
		}
		f.envoyFilter++
	}
}

// TestGatewayDocFlags: every rlstore flag docs/gateway.md names is one
// rlstore defines.
func TestGatewayDocFlags(t *testing.T) {
	page, err := os.ReadFile("../../docs/gateway.md")
	require.NoError(t, err)
	var c config
	fs := newFlagSet(&c)
	named := regexp.MustCompile("`(--[a-z0-9-]+)").FindAll(page, -1)
	named = append(named, regexp.MustCompile(`(?m)^rlstore .*`).FindAll(page, -1)...)
	n := 0
	for _, m := range named {
		for _, flagName := range regexp.MustCompile(`--([a-z0-9-]+)`).FindAllStringSubmatch(string(m), -1) {
			assert.NotNil(t, fs.Lookup(flagName[1]), "docs/gateway.md names --%s, which rlstore does not define", flagName[1])
			n++
		}
	}
	assert.Greater(t, n, 10)
}
