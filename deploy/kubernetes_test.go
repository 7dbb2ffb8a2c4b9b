package deploy_test

import (
	"flag"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// There is no Kubernetes here: these tests render deploy/kubernetes with
// kustomize (as a library, the code kubectl apply -k runs), decode every
// object strictly into its k8s.io/api type (an unknown or misspelt field
// fails), and check the objects against each other and rlstore's flags.

var update = flag.Bool("update", false, "rewrite the generated files under kubernetes/components/monitoring")

// The kustomizations the tests render.
const (
	base    = "kubernetes/base"
	example = "kubernetes/example"
)

// serviceMonitor and prometheusRule are the Prometheus operator's types,
// only the fields used here (its Go module is heavy), decoded as strictly.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		JobLabel  string               `json:"jobLabel,omitempty"`
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path,omitempty"`
			Interval string `json:"interval,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

type prometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              ruleGroups `json:"spec"`
}

type ruleGroups struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for,omitempty"`
			Labels      map[string]string `json:"labels,omitempty"`
			Annotations map[string]string `json:"annotations,omitempty"`
		} `json:"rules"`
	} `json:"groups"`
}

// manifests are the objects one kustomization renders.
type manifests struct {
	sts        *appsv1.StatefulSet
	services   map[string]*corev1.Service
	pdbs       []*policyv1.PodDisruptionBudget
	netpols    []*networkingv1.NetworkPolicy
	configMaps []*corev1.ConfigMap
	monitors   []*serviceMonitor
	rules      []*prometheusRule
}

func render(t *testing.T, dir string) manifests {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err, "kustomize build %s", dir)
	out := manifests{services: map[string]*corev1.Service{}}
	for _, res := range m.Resources() {
		y, err := res.AsYAML()
		require.NoError(t, err)
		kind := res.GetKind()
		strict := func(into any) {
			require.NoError(t, yaml.UnmarshalStrict(y, into), "%s %s:\n%s", kind, res.GetName(), y)
		}
		switch kind {
		case "StatefulSet":
			require.Nil(t, out.sts, "one StatefulSet")
			out.sts = &appsv1.StatefulSet{}
			strict(out.sts)
		case "Service":
			s := &corev1.Service{}
			strict(s)
			out.services[s.Name] = s
		case "PodDisruptionBudget":
			out.pdbs = append(out.pdbs, &policyv1.PodDisruptionBudget{})
			strict(out.pdbs[len(out.pdbs)-1])
		case "NetworkPolicy":
			out.netpols = append(out.netpols, &networkingv1.NetworkPolicy{})
			strict(out.netpols[len(out.netpols)-1])
		case "ConfigMap":
			out.configMaps = append(out.configMaps, &corev1.ConfigMap{})
			strict(out.configMaps[len(out.configMaps)-1])
		case "ServiceMonitor":
			out.monitors = append(out.monitors, &serviceMonitor{})
			strict(out.monitors[len(out.monitors)-1])
		case "PrometheusRule":
			out.rules = append(out.rules, &prometheusRule{})
			strict(out.rules[len(out.rules)-1])
		default:
			t.Fatalf("%s renders a %s, which this test does not decode: add it", dir, kind)
		}
	}
	require.NotNil(t, out.sts, "%s renders a StatefulSet", dir)
	return out
}

// both renders the base and the example overlay, for checks that hold for each.
func both(t *testing.T, check func(t *testing.T, m manifests)) {
	for _, dir := range []string{base, example} {
		t.Run(filepath.Base(dir), func(t *testing.T) { check(t, render(t, dir)) })
	}
}

func server(t *testing.T, m manifests) corev1.Container {
	t.Helper()
	require.Len(t, m.sts.Spec.Template.Spec.Containers, 1)
	return m.sts.Spec.Template.Spec.Containers[0]
}

// args are the container's flags: --name=value, each once.
func args(t *testing.T, c corev1.Container) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, a := range c.Args {
		name, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		require.True(t, ok && strings.HasPrefix(a, "--"), "write args as --flag=value: %q", a)
		_, dup := out[name]
		require.False(t, dup, "--%s given twice", name)
		out[name] = v
	}
	return out
}

func portOf(t *testing.T, addr string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err, addr)
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	return int32(n)
}

// containerPort resolves a probe's or Service's port (a name or a number).
func containerPort(t *testing.T, c corev1.Container, p intstr.IntOrString) corev1.ContainerPort {
	t.Helper()
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp
		}
	}
	t.Fatalf("no container port %s", p.String())
	return corev1.ContainerPort{}
}

func seconds(t *testing.T, d string) int64 {
	t.Helper()
	v, err := time.ParseDuration(d)
	require.NoError(t, err, d)
	return int64(v / time.Second)
}

func TestManifestsDecodeStrictly(t *testing.T) {
	both(t, func(t *testing.T, m manifests) {
		assert.Contains(t, m.services, "rlstore-peers")
		assert.Contains(t, m.services, "rlstore")
		assert.Len(t, m.pdbs, 1)
		assert.Len(t, m.netpols, 1)
	})
	// And strict decoding does fail on a misspelt field.
	var sts appsv1.StatefulSet
	assert.Error(t, yaml.UnmarshalStrict([]byte("kind: StatefulSet\nspec:\n  replica: 3\n"), &sts))
}

func TestProbesMatchFlags(t *testing.T) {
	both(t, func(t *testing.T, m manifests) {
		c := server(t, m)
		metrics := portOf(t, args(t, c)["metrics-addr"])
		for name, probe := range map[string]struct {
			p    *corev1.Probe
			path string
		}{"startup": {c.StartupProbe, "/healthz"}, "liveness": {c.LivenessProbe, "/healthz"}, "readiness": {c.ReadinessProbe, "/readyz"}} {
			require.NotNil(t, probe.p, "%s probe", name)
			require.NotNil(t, probe.p.HTTPGet, "%s probe is an HTTP GET", name)
			assert.Equal(t, probe.path, probe.p.HTTPGet.Path, "%s probe path", name)
			assert.Equal(t, metrics, containerPort(t, c, probe.p.HTTPGet.Port).ContainerPort, "%s probe asks --metrics-addr's port", name)
		}
		startup := c.StartupProbe.PeriodSeconds * c.StartupProbe.FailureThreshold
		assert.GreaterOrEqual(t, startup, int32(300), "the startup probe allows 5 minutes of data-dir replay")
	})
}

func TestGracePeriodCoversShutdown(t *testing.T) {
	both(t, func(t *testing.T, m manifests) {
		c := server(t, m)
		a := args(t, c)
		require.NotNil(t, c.Lifecycle, "a preStop hook")
		require.NotNil(t, c.Lifecycle.PreStop.Sleep, "preStop sleeps without a shell")
		preStop := c.Lifecycle.PreStop.Sleep.Seconds
		drain, leave := seconds(t, a["shutdown-timeout"]), seconds(t, a["cluster-leave-timeout"])
		const gossipLeave = 1 // cmd/rlstore's clusterNode.close
		grace := m.sts.Spec.Template.Spec.TerminationGracePeriodSeconds
		require.NotNil(t, grace)
		assert.Greater(t, *grace, preStop+drain+leave+gossipLeave,
			"terminationGracePeriodSeconds covers preStop %d + --shutdown-timeout %d + --cluster-leave-timeout %d + the gossip leave, with room for a snapshot", preStop, drain, leave)
	})
}

func TestSelectorsMatchPods(t *testing.T) {
	both(t, func(t *testing.T, m manifests) {
		pod := labels.Set(m.sts.Spec.Template.Labels)
		sel, err := metav1.LabelSelectorAsSelector(m.sts.Spec.Selector)
		require.NoError(t, err)
		assert.True(t, sel.Matches(pod), "the StatefulSet selects its pods")
		for _, s := range m.services {
			require.NotEmpty(t, s.Spec.Selector, "Service %s selects pods", s.Name)
			assert.True(t, labels.SelectorFromSet(s.Spec.Selector).Matches(pod), "Service %s selects the StatefulSet's pods", s.Name)
		}
		for _, p := range m.pdbs {
			sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
			require.NoError(t, err)
			assert.True(t, sel.Matches(pod), "the PDB selects the StatefulSet's pods")
			require.NotNil(t, p.Spec.MaxUnavailable)
			assert.Equal(t, intstr.FromInt32(1), *p.Spec.MaxUnavailable)
		}
		for _, np := range m.netpols {
			sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
			require.NoError(t, err)
			assert.True(t, sel.Matches(pod), "the NetworkPolicy applies to the StatefulSet's pods")
		}
		for _, tsc := range m.sts.Spec.Template.Spec.TopologySpreadConstraints {
			sel, err := metav1.LabelSelectorAsSelector(tsc.LabelSelector)
			require.NoError(t, err)
			assert.True(t, sel.Matches(pod), "topology spread over %s counts the StatefulSet's pods", tsc.TopologyKey)
		}
		keys := map[string]bool{}
		for _, tsc := range m.sts.Spec.Template.Spec.TopologySpreadConstraints {
			keys[tsc.TopologyKey] = true
		}
		assert.True(t, keys["kubernetes.io/hostname"] && keys["topology.kubernetes.io/zone"], "spread across nodes and zones")
	})
}

// TestPeersFindEachOther: the peers Service is headless and lists pods
// before they are ready, --join names it, and each pod's node name and
// advertised address come from the pod.
func TestPeersFindEachOther(t *testing.T) {
	both(t, func(t *testing.T, m manifests) {
		peers := m.services[m.sts.Spec.ServiceName]
		require.NotNil(t, peers, "the StatefulSet's serviceName %q is a Service", m.sts.Spec.ServiceName)
		assert.Equal(t, corev1.ClusterIPNone, peers.Spec.ClusterIP, "the peers Service is headless")
		assert.True(t, peers.Spec.PublishNotReadyAddresses, "starting pods must find each other before they are ready")
		c := server(t, m)
		a := args(t, c)
		gossip := portOf(t, a["cluster-addr"])
		assert.Equal(t, peers.Name+".$(POD_NAMESPACE).svc:"+strconv.Itoa(int(gossip)), a["join"], "--join names the peers Service")
		assert.Equal(t, "$(POD_NAME)", a["node-name"], "the pod's name is its stable node name")
		assert.Equal(t, "$(POD_IP):"+strconv.Itoa(int(gossip)), a["cluster-advertise"])
		env := map[string]string{}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
				env[e.Name] = e.ValueFrom.FieldRef.FieldPath
			}
		}
		assert.Equal(t, map[string]string{"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace", "POD_IP": "status.podIP"}, env)
		client := m.services["rlstore"]
		assert.NotEqual(t, corev1.ClusterIPNone, client.Spec.ClusterIP, "the client Service balances")
		assert.False(t, client.Spec.PublishNotReadyAddresses, "clients reach ready pods only")
	})
}

func TestNoContainerRunsAsRoot(t *testing.T) {
	dockerUser := regexp.MustCompile(`(?m)^USER (\d+)`).FindStringSubmatch(readFile(t, "docker/Dockerfile"))
	require.NotNil(t, dockerUser)
	both(t, func(t *testing.T, m manifests) {
		pod := m.sts.Spec.Template.Spec.SecurityContext
		require.NotNil(t, pod)
		for _, c := range append(m.sts.Spec.Template.Spec.InitContainers, m.sts.Spec.Template.Spec.Containers...) {
			sc := c.SecurityContext
			require.NotNil(t, sc, "container %s has a securityContext", c.Name)
			nonRoot, uid := pod.RunAsNonRoot, pod.RunAsUser
			if sc.RunAsNonRoot != nil {
				nonRoot = sc.RunAsNonRoot
			}
			if sc.RunAsUser != nil {
				uid = sc.RunAsUser
			}
			assert.True(t, nonRoot != nil && *nonRoot, "container %s: runAsNonRoot", c.Name)
			require.NotNil(t, uid, "container %s: runAsUser", c.Name)
			assert.NotZero(t, *uid, "container %s runs as root", c.Name)
			assert.Equal(t, dockerUser[1], strconv.Itoa(int(*uid)), "the image's user")
			assert.False(t, sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation, "container %s: allowPrivilegeEscalation false", c.Name)
			assert.True(t, sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem, "container %s: readOnlyRootFilesystem", c.Name)
			require.NotNil(t, sc.Capabilities)
			assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
		}
	})
}

// TestEveryFlagPortDeclared: each port a flag in the args opens is a
// container port of the right protocol; the peers Service carries gossip
// and metrics; the NetworkPolicy keeps gossip to rlstore's pods and
// metrics to the cluster's.
func TestEveryFlagPortDeclared(t *testing.T) {
	both(t, func(t *testing.T, m manifests) {
		c := server(t, m)
		a := args(t, c)
		type port struct {
			n     int32
			proto corev1.Protocol
		}
		want := map[string][]port{}
		for name, v := range a {
			switch {
			case name == "port" || strings.HasSuffix(name, "-port"):
				n, err := strconv.Atoi(v)
				require.NoError(t, err)
				want[name] = []port{{int32(n), corev1.ProtocolTCP}}
			case name == "cluster-addr":
				want[name] = []port{{portOf(t, v), corev1.ProtocolTCP}, {portOf(t, v), corev1.ProtocolUDP}}
			case name == "pprof-addr":
				host, _, _ := net.SplitHostPort(v)
				assert.True(t, net.ParseIP(host).IsLoopback(), "--pprof-addr stays on loopback")
			case strings.HasSuffix(name, "-addr"):
				want[name] = []port{{portOf(t, v), corev1.ProtocolTCP}}
			}
		}
		require.Contains(t, want, "port")
		require.Contains(t, want, "cluster-addr")
		require.Contains(t, want, "metrics-addr")
		named := map[string]corev1.ContainerPort{}
		for _, cp := range c.Ports {
			named[cp.Name] = cp
		}
		for flagName, ports := range want {
			for _, p := range ports {
				found := false
				for _, cp := range c.Ports {
					found = found || (cp.ContainerPort == p.n && cp.Protocol == p.proto)
				}
				assert.True(t, found, "--%s opens %d/%s: declare it as a container port", flagName, p.n, p.proto)
			}
		}
		peers := m.services[m.sts.Spec.ServiceName]
		served := map[string]bool{}
		for _, sp := range peers.Spec.Ports {
			cp := containerPort(t, c, sp.TargetPort)
			assert.Equal(t, cp.Protocol, sp.Protocol, "peers Service port %s", sp.Name)
			served[cp.Name] = true
		}
		for _, name := range []string{"gossip", "gossip-udp", "metrics", "resp"} {
			assert.True(t, served[name], "the peers Service carries %s", name)
		}
		checkNetworkPolicy(t, m, named)
	})
}

func checkNetworkPolicy(t *testing.T, m manifests, named map[string]corev1.ContainerPort) {
	t.Helper()
	require.Len(t, m.netpols, 1)
	np := m.netpols[0]
	assert.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, np.Spec.PolicyTypes)
	pod := labels.Set(m.sts.Spec.Template.Labels)
	open := map[string][]networkingv1.NetworkPolicyPeer{}
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			require.NotNil(t, p.Port)
			cp, ok := named[p.Port.StrVal]
			require.True(t, ok, "NetworkPolicy port %s is a named container port", p.Port.String())
			assert.Equal(t, cp.Protocol, *p.Protocol, "NetworkPolicy port %s", cp.Name)
			open[cp.Name] = append(open[cp.Name], rule.From...)
			if len(rule.From) == 0 {
				open[cp.Name] = append(open[cp.Name], networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0"}})
			}
		}
	}
	assert.Contains(t, open, "resp", "clients reach RESP")
	for _, name := range []string{"gossip", "gossip-udp"} {
		require.NotEmpty(t, open[name], "%s is allowed from the other nodes", name)
		for _, from := range open[name] {
			require.NotNil(t, from.PodSelector, "%s only from pods", name)
			assert.Nil(t, from.NamespaceSelector, "%s only from this namespace", name)
			assert.Nil(t, from.IPBlock)
			sel, err := metav1.LabelSelectorAsSelector(from.PodSelector)
			require.NoError(t, err)
			assert.True(t, sel.Matches(pod) && !sel.Empty(), "%s only from rlstore's pods", name)
		}
	}
	require.NotEmpty(t, open["metrics"])
	for _, from := range open["metrics"] {
		assert.Nil(t, from.IPBlock, "metrics only from inside the cluster")
	}
}

// TestArgsAreRealFlags runs the real binary's --help: every flag the
// manifests pass exists.
func TestArgsAreRealFlags(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "rlstore")
	build := exec.Command("go", "build", "-o", bin, "./cmd/rlstore")
	build.Dir = ".."
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	help, err := exec.Command(bin, "--help").Output()
	require.NoError(t, err)
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  --([a-z0-9-]+)`).FindAllStringSubmatch(string(help), -1) {
		flags[m[1]] = true
	}
	require.Contains(t, flags, "join")
	both(t, func(t *testing.T, m manifests) {
		for name := range args(t, server(t, m)) {
			assert.True(t, flags[name], "--%s is not a flag of rlstore", name)
		}
	})
}

// TestSecretsComeFromASecret: the password and the cluster key are files
// in a mounted Secret, not values in the manifests.
func TestSecretsComeFromASecret(t *testing.T) {
	both(t, func(t *testing.T, m manifests) {
		c := server(t, m)
		a := args(t, c)
		for _, f := range []string{"requirepass-file", "cluster-keyring"} {
			path := a[f]
			require.NotEmpty(t, path, "--%s", f)
			vol := mountedVolume(t, m, c, path)
			require.NotNil(t, vol.Secret, "--%s is in a Secret volume", f)
			assert.Equal(t, "rlstore", vol.Secret.SecretName)
		}
		for _, f := range []string{"requirepass", "cluster-key"} {
			assert.NotContains(t, a, f, "--%s would put the secret in the manifest", f)
		}
	})
}

// mountedVolume is the volume mounted over path.
func mountedVolume(t *testing.T, m manifests, c corev1.Container, path string) corev1.Volume {
	t.Helper()
	for _, vm := range c.VolumeMounts {
		if strings.HasPrefix(path, strings.TrimSuffix(vm.MountPath, "/")+"/") || path == vm.MountPath {
			for _, v := range m.sts.Spec.Template.Spec.Volumes {
				if v.Name == vm.Name {
					return v
				}
			}
			return corev1.Volume{Name: vm.Name} // a volumeClaimTemplate's
		}
	}
	t.Fatalf("nothing is mounted over %s", path)
	return corev1.Volume{}
}

func TestDataDirVolume(t *testing.T) {
	m := render(t, base)
	c := server(t, m)
	v := mountedVolume(t, m, c, args(t, c)["data-dir"])
	assert.NotNil(t, v.EmptyDir, "the base keeps --data-dir in an emptyDir")
	assert.Empty(t, m.sts.Spec.VolumeClaimTemplates)

	m = render(t, example)
	c = server(t, m)
	v = mountedVolume(t, m, c, args(t, c)["data-dir"])
	assert.Nil(t, v.EmptyDir, "components/persistence replaces the emptyDir")
	require.Len(t, m.sts.Spec.VolumeClaimTemplates, 1)
	assert.Equal(t, v.Name, m.sts.Spec.VolumeClaimTemplates[0].Name, "--data-dir is on the claim")
	require.NotNil(t, m.sts.Spec.PersistentVolumeClaimRetentionPolicy)
	assert.Equal(t, appsv1.RetainPersistentVolumeClaimRetentionPolicyType, m.sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled)
}

// TestMonitoringWired: the ServiceMonitor scrapes the metrics port of a
// Service that selects every pod, under a job name the alerts match, and
// the rules and dashboard are deploy/prometheus's and deploy/grafana's.
func TestMonitoringWired(t *testing.T) {
	m := render(t, example)
	require.Len(t, m.monitors, 1)
	sm := m.monitors[0]
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	require.NoError(t, err)
	var svc *corev1.Service
	for _, s := range m.services {
		if sel.Matches(labels.Set(s.Labels)) {
			require.Nil(t, svc, "the ServiceMonitor selects one Service")
			svc = s
		}
	}
	require.NotNil(t, svc, "the ServiceMonitor selects a Service")
	assert.True(t, svc.Spec.PublishNotReadyAddresses, "every pod is scraped, ready or not")
	c := server(t, m)
	metrics := portOf(t, args(t, c)["metrics-addr"])
	require.Len(t, sm.Spec.Endpoints, 1)
	found := false
	for _, sp := range svc.Spec.Ports {
		if sp.Name == sm.Spec.Endpoints[0].Port {
			found = true
			assert.Equal(t, metrics, containerPort(t, c, sp.TargetPort).ContainerPort, "it scrapes --metrics-addr")
		}
	}
	assert.True(t, found, "the ServiceMonitor's port %q is a port of %s", sm.Spec.Endpoints[0].Port, svc.Name)
	assert.Equal(t, "/metrics", sm.Spec.Endpoints[0].Path)
	job := svc.Name // the operator's default job label
	if sm.Spec.JobLabel != "" {
		job = svc.Labels[sm.Spec.JobLabel]
	}
	upJob := regexp.MustCompile(`up\{job=~"([^"]+)"\}`).FindStringSubmatch(readFile(t, "prometheus/alerts.yml"))
	require.NotNil(t, upJob, "alerts.yml's up{job=~...} rule")
	assert.Regexp(t, "^(?:"+upJob[1]+")$", job, "the job the ServiceMonitor makes is the one the alerts watch")

	require.Len(t, m.rules, 1)
	var want ruleGroups
	require.NoError(t, yaml.UnmarshalStrict([]byte(readFile(t, "prometheus/alerts.yml")), &want))
	assert.Equal(t, want, m.rules[0].Spec, "the PrometheusRule holds alerts.yml's rules")
	require.Len(t, m.configMaps, 1)
	assert.Equal(t, "1", m.configMaps[0].Labels["grafana_dashboard"], "Grafana's sidecar loads it")
	assert.JSONEq(t, readFile(t, "grafana/rlstore.json"), m.configMaps[0].Data["rlstore.json"])
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}
