"""What a built file's code is, read once for every layer (pure, the bottom of the layering):
``code`` cuts an ELF file (a cubin, an object file, a program, a shared library) into units
that can be compared, leaving out what describes the build rather than the code (debug
information, notes, the compiler's signature), and digests them: ``ksweep guard --check``
compares two builds by them, and a sweep knows two configs' builds for one program by
their digest."""
