import ArgumentParser
import HearthCommands
import HearthCore

@main
struct HearthMain {
    static func main() async {
        MemoryTuning.apply()
        await Hearth.main()
    }
}
