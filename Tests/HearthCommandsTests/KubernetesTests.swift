import ArgumentParser
import Foundation
import HearthTestSupport
import Testing

@testable import HearthCommandLine
@testable import HearthCommands

/// deploy/kubernetes: each variant built as kustomize builds it (the resources its
/// kustomizations list, in the namespace they name), validated offline against Kubernetes
/// 1.31's schemas in strict mode (kubernetes-validate, pinned in scripts/bootstrap), and checked
/// against what `hearth serve` takes and what docker-compose.yml runs.
@Suite("Kubernetes manifests")
struct KubernetesTests {
    static let kubernetesVersion = "1.31.0"
    static let root = repositoryRoot.appendingPathComponent("deploy/kubernetes")

    enum Variant: String, CaseIterable {
        case sqlite, postgres
    }

    @Test("each variant is valid Kubernetes 1.31 in strict mode, and commits no secret", arguments: Variant.allCases)
    func valid(_ variant: Variant) async throws {
        let documents = try await Self.build(variant)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-k8s-\(UUID()).json")
        defer { try? FileManager.default.removeItem(at: file) }
        // A YAML stream of JSON documents (JSON is YAML).
        let stream = try documents.map {
            String(decoding: try JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]), as: UTF8.self)
        }.joined(separator: "\n---\n")
        try stream.write(to: file, atomically: true, encoding: .utf8)
        let validator = repositoryRoot.appendingPathComponent(".build/tools/python/bin/kubernetes-validate")
        try #require(
            FileManager.default.isExecutableFile(atPath: validator.path),
            "kubernetes-validate is missing: run scripts/bootstrap"
        )
        let result = try await runProcess(
            validator,
            ["--strict", "--quiet", "-k", Self.kubernetesVersion, file.path]
        )
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(documents.allSatisfy { $0["kind"] as? String != "Secret" }, "Secrets are referenced by name only")
        #expect(
            documents.contains {
                $0["kind"] as? String == "Namespace" && Self.metadata($0)["name"] as? String == "hearth"
            }
        )
    }

    @Test(
        "every process runs as hearth serve takes it, hardened, probed, drained, with its own links' credentials",
        arguments: Variant.allCases
    )
    func processes(_ variant: Variant) async throws {
        let documents = try await Self.build(variant)
        let compose = try await Self.composeCommands()
        for process in ProcessName.allCases {
            let workload = try #require(
                documents.first {
                    ["Deployment", "StatefulSet"].contains($0["kind"] as? String)
                        && Self.metadata($0)["name"] as? String == process.rawValue
                },
                "\(process) runs"
            )
            let pod = try #require(Self.path(workload, "spec", "template", "spec"))
            let container = try #require((pod["containers"] as? [[String: Any]])?.first)
            let args = try #require(container["args"] as? [String])
            #expect(Array(args.prefix(2)) == ["serve", process.rawValue])
            #expect(throws: Never.self, "\(process)") { try Serve.parse(Array(args.dropFirst())) }
            let port = process.defaultPort
            #expect(Self.value(of: "--port", in: args) == "\(port)")
            #expect(Self.value(of: "--data", in: args) == "/data")
            // What the processes say to each other: as in docker-compose.yml.
            let composed = try #require(compose[process.rawValue])
            for flag in ["--port", "--secrets-dir", "--checkins", "--routines", "--safety"] {
                #expect(Self.value(of: flag, in: args) == Self.value(of: flag, in: composed), "\(process) \(flag)")
            }
            let ports = (container["ports"] as? [[String: Any]] ?? []).compactMap { $0["containerPort"] as? Int }
            #expect(ports.contains(port))

            // Ready when the health service answers SERVING on its own port (the gateway, whose
            // listener is TLS for a public name: when it accepts connections); alive when it
            // accepts connections. The drain has its time.
            let readiness = Self.path(container, "readinessProbe") ?? [:]
            if process == .gateway {
                #expect(Self.path(readiness, "tcpSocket")?["port"] as? String == "rpc")
            } else {
                let command = Self.path(readiness, "exec")?["command"] as? [String]
                #expect(command == ["hearth", "health", "--target", "127.0.0.1:\(port)"], "\(process)")
            }
            #expect(Self.path(container, "livenessProbe", "tcpSocket")?["port"] as? String == "rpc", "\(process)")
            #expect((pod["terminationGracePeriodSeconds"] as? Int ?? 0) >= 35, "the 5 s pause and the 30 s drain")
            #expect(Self.path(container, "lifecycle", "preStop") != nil)

            // Metrics where the annotations say.
            let metricsPort = try #require(Self.value(of: "--metrics-port", in: args))
            let annotations = Self.path(workload, "spec", "template", "metadata", "annotations") ?? [:]
            #expect(annotations["prometheus.io/scrape"] as? String == "true")
            #expect(annotations["prometheus.io/port"] as? String == metricsPort)

            // Hardened: not root, nothing written outside its volumes, no privilege to gain.
            #expect(Self.path(pod, "securityContext")?["runAsNonRoot"] as? Bool == true)
            let security = Self.path(container, "securityContext") ?? [:]
            #expect(security["readOnlyRootFilesystem"] as? Bool == true, "\(process)")
            #expect(security["allowPrivilegeEscalation"] as? Bool == false, "\(process)")
            for bound in ["requests", "limits"] {
                let resources = Self.path(container, "resources", bound) ?? [:]
                #expect(resources["cpu"] != nil && resources["memory"] != nil, "\(process) \(bound)")
            }

            // The credentials of its own links and no others (the gateway also the token's).
            let volumes = pod["volumes"] as? [[String: Any]] ?? []
            let links = try #require(volumes.first { $0["name"] as? String == "links" })
            #expect(Self.path(links, "secret")?["secretName"] as? String == "hearth-links")
            let items = (Self.path(links, "secret")?["items"] as? [[String: Any]] ?? []).compactMap {
                $0["path"] as? String
            }
            let expected = ProcessLink.touching(process).map(\.fileName) + (process == .gateway ? ["jwt.key"] : [])
            #expect(items.sorted() == expected.sorted(), "\(process)")
            let mounts = container["volumeMounts"] as? [[String: Any]] ?? []
            #expect(
                mounts.contains {
                    $0["name"] as? String == "links" && $0["mountPath"] as? String == "/run/secrets/hearth"
                }
            )
        }
    }

    @Test(
        "the gateway finds each service's replicas by its headless Service, and only callers reach a service",
        arguments: Variant.allCases
    )
    func routesAndPolicies(_ variant: Variant) async throws {
        let documents = try await Self.build(variant)
        let gateway = try #require(
            documents.first {
                Self.metadata($0)["name"] as? String == "gateway" && $0["kind"] as? String == "Deployment"
            }
        )
        let args = try #require(
            (Self.path(gateway, "spec", "template", "spec")?["containers"] as? [[String: Any]])?.first?["args"]
                as? [String]
        )
        let backends = args.indices.filter { args[$0] == "--backend" }.map { args[$0 + 1] }
        for service in ProcessName.services {
            let headless = try #require(
                documents.first {
                    $0["kind"] as? String == "Service"
                        && Self.metadata($0)["name"] as? String == "\(service.rawValue)-headless"
                }
            )
            #expect(Self.path(headless, "spec")?["clusterIP"] as? String == "None")
            for package in service.packages {
                #expect(
                    backends.contains("\(package)=\(service.rawValue)-headless:\(service.defaultPort)"),
                    "\(package)"
                )
            }
            // Ingress from the gateway and the processes whose links call it, on its port.
            let policy = try #require(
                documents.first {
                    $0["kind"] as? String == "NetworkPolicy"
                        && Self.metadata($0)["name"] as? String == "\(service.rawValue)-from-callers"
                }
            )
            let rules = Self.path(policy, "spec")?["ingress"] as? [[String: Any]] ?? []
            let callers = rules.flatMap { $0["from"] as? [[String: Any]] ?? [] }.compactMap {
                Self.path($0, "podSelector", "matchLabels")?["app.kubernetes.io/name"] as? String
            }
            let links = ProcessLink.all.filter { $0.callee == service }.map(\.caller.rawValue)
            #expect(Set(callers) == Set(links), "\(service)")
            let ports = rules.flatMap { $0["ports"] as? [[String: Any]] ?? [] }.compactMap { $0["port"] as? Int }
            #expect(ports == [service.defaultPort])
        }
        let denyAll = documents.first { Self.metadata($0)["name"] as? String == "deny-ingress" }
        #expect(denyAll.flatMap { Self.path($0, "spec", "podSelector") }?.isEmpty == true, "nothing else gets in")
        #expect(documents.contains { $0["kind"] as? String == "HorizontalPodAutoscaler" })
        #expect(
            documents.contains {
                $0["kind"] as? String == "PodDisruptionBudget" && Self.metadata($0)["name"] as? String == "gateway"
            }
        )

        // Safety: one replica on its volume, or three on PostgreSQL with no volume.
        let safety = try #require(
            documents.first {
                ["Deployment", "StatefulSet"].contains($0["kind"] as? String)
                    && Self.metadata($0)["name"] as? String == "safety"
            }
        )
        let safetyArgs = try #require(
            (Self.path(safety, "spec", "template", "spec")?["containers"] as? [[String: Any]])?.first?["args"]
                as? [String]
        )
        switch variant {
        case .sqlite:
            #expect(safety["kind"] as? String == "StatefulSet" && Self.path(safety, "spec")?["replicas"] as? Int == 1)
            #expect(Self.path(safety, "spec")?["volumeClaimTemplates"] != nil)
            #expect(!safetyArgs.contains("--store"))
        case .postgres:
            #expect(
                safety["kind"] as? String == "Deployment" && (Self.path(safety, "spec")?["replicas"] as? Int ?? 0) >= 3
            )
            #expect(Self.value(of: "--store", in: safetyArgs)?.hasPrefix("postgres://") == true)
            #expect(Self.value(of: "--store-password-file", in: safetyArgs) != nil)
            #expect(Self.value(of: "--data-key-file", in: safetyArgs) != nil, "one data key for every replica")
        }
    }

    // MARK: Building a variant

    /// The variant's documents, as `kubectl kustomize` builds them: its kustomization's
    /// resources (files, or folders with a kustomization of their own), in its namespace. A
    /// kustomization here uses nothing else but `images` (which changes no document checked).
    static func build(_ variant: Variant) async throws -> [[String: Any]] {
        let program = """
            import json, os, sys, yaml
            allowed = {'apiVersion', 'kind', 'resources', 'namespace', 'images'}
            def build(folder):
                k = yaml.safe_load(open(os.path.join(folder, 'kustomization.yaml')))
                extra = set(k) - allowed
                if extra: sys.exit(f'{folder}: kustomization uses {sorted(extra)}, which this build does not do')
                docs = []
                for r in k.get('resources', []):
                    path = os.path.normpath(os.path.join(folder, r))
                    docs += build(path) if os.path.isdir(path) else [d for d in yaml.safe_load_all(open(path)) if d]
                if 'namespace' in k:
                    for d in docs:
                        if d['kind'] != 'Namespace': d.setdefault('metadata', {})['namespace'] = k['namespace']
                return docs
            json.dump(build(sys.argv[1]), sys.stdout)
            """
        let result = try await runProcess(
            Self.python,
            ["-c", program, Self.root.appendingPathComponent(variant.rawValue).path]
        )
        try #require(result.status == 0, "\(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
    }

    /// Each process's command in docker-compose.yml.
    static func composeCommands() async throws -> [String: [String]] {
        let result = try await runProcess(
            Self.python,
            [
                "-c",
                """
                import json, sys, yaml
                services = yaml.safe_load(open(sys.argv[1]))['services']
                json.dump({name: s['command'] for name, s in services.items()}, sys.stdout)
                """,
                repositoryRoot.appendingPathComponent("docker-compose.yml").path,
            ]
        )
        try #require(result.status == 0, "\(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: [String]])
    }

    /// The tools' Python (scripts/bootstrap), which has PyYAML.
    static let python = repositoryRoot.appendingPathComponent(".build/tools/python/bin/python")

    static func metadata(_ document: [String: Any]) -> [String: Any] {
        document["metadata"] as? [String: Any] ?? [:]
    }

    static func path(_ object: [String: Any], _ keys: String...) -> [String: Any]? {
        var current: [String: Any]? = object
        for key in keys { current = current?[key] as? [String: Any] }
        return current
    }

    /// The value after `flag` in `command`; nil when the flag is not there.
    static func value(of flag: String, in command: [String]) -> String? {
        command.firstIndex(of: flag).flatMap { command.indices.contains($0 + 1) ? command[$0 + 1] : nil }
    }
}
