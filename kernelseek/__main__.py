from kernelseek.cli import main

main()
