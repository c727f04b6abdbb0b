from distiller.cli import main

main()
