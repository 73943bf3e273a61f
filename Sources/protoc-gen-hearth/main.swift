import SwiftProtobufPluginLibrary

/// `protoc-gen-hearth`: from each `service` block of the `.proto` files it is given, a Swift file
/// (`NAME.hearth.swift`) with the service's typed method table, the protocol its server
/// implements and a typed client; with `Catalog=NAME`, one more file listing every service.
/// `scripts/gen-proto` runs it beside `protoc-gen-swift`.
///
/// Options (`--hearth_opt=`): `Catalog=NAME` (the catalog's enum), `Runtime` (the files go into
/// HearthRPC itself, which they then do not import).
struct HearthContractGenerator: CodeGenerator {
    var supportedFeatures: [Google_Protobuf_Compiler_CodeGeneratorResponse.Feature] { [.proto3Optional] }

    func generate(
        files: [FileDescriptor],
        parameter: any CodeGeneratorParameter,
        protoCompilerContext: any ProtoCompilerContext,
        generatorOutputs: any GeneratorOutputs
    ) throws {
        let options = Dictionary(parameter.parsedPairs.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
        let namer = SwiftProtobufNamer()
        var services: [String] = []
        for file in files where !file.services.isEmpty {
            let contract = ContractFile(file: file, namer: namer, insideRuntime: options["Runtime"] != nil)
            try generatorOutputs.add(fileName: contract.fileName, contents: try contract.source())
            services += contract.serviceTypeNames
        }
        if let catalog = options["Catalog"], !catalog.isEmpty {
            try generatorOutputs.add(
                fileName: "\(catalog).hearth.swift",
                contents: ContractFile.catalogSource(named: catalog, services: services)
            )
        }
    }
}

HearthContractGenerator.main()
