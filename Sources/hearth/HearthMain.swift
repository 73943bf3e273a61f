import ArgumentParser
import HearthCommands

@main
struct HearthMain {
    static func main() async {
        await Hearth.main()
    }
}
