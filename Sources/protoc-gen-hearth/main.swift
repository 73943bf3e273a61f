import SwiftProtobufPluginLibrary

/// `protoc-gen-hearth`: from each `service` block of the `.proto` files it is given, the
/// service's typed method table (`NAME.hearth.swift`), the protocol its server implements
/// (`NAME.server.hearth.swift`) and a typed client (`NAME.client.hearth.swift`); with
/// `Catalog=NAME`, one more file listing every service.
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
            for part in ContractFile.Part.allCases {
                try generatorOutputs.add(fileName: contract.fileName(part), contents: try contract.source(part))
            }
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
