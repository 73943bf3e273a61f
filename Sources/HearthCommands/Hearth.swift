public import ArgumentParser
import HearthBench

/// `hearth`: runs the Hearth processes and talks to them.
public struct Hearth: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "hearth",
        abstract: "Hearth: the backend of check-in products.",
        discussion: """
            Start everything on loopback with stores under ./data:
              hearth up
            Call a method through the gateway with a JSON request, like grpcurl:
              export HEARTH_TOKEN=$(hearth token --user alice)
              hearth call hearth.echo.v1.Echo/Echo '{"text": "hi"}'
            Explore the contracts: the services, their methods, what a request takes:
              hearth list
              hearth describe hearth.safety.v1.Safety/AddContact
            Load-test the gateway (50 calls a second per user) or one process, like ghz:
              hearth bench --target 127.0.0.1:7100 --rps 40 hearth.echo.v1.Echo/Echo '{"text": "hi"}'
            """,
        subcommands: [
            Up.self, Serve.self, Call.self, ListCommand.self, DescribeCommand.self, HealthCommand.self, Bench.self,
            BenchCheckins.self, BenchSafety.self,
            BenchTasks.self, FaultWriter.self, SimulateDay.self,
            TokenCommand.self, MakeSecrets.self, RotateDataKey.self, MigrateStore.self,
        ]
    )

    public init() {}
}
