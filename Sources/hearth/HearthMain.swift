import ArgumentParser
import HearthCommands

@main
struct HearthMain {
    static func main() async {
        MemoryTuning.apply()
        await Hearth.main()
    }
}
