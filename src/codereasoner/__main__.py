from codereasoner.cli import main

main()
