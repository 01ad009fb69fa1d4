from engine_bridge.cli import main

main()
