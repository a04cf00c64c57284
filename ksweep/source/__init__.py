"""A kernel's source as ksweep reads it, outside any sweep: its text read and written back
byte for byte (``files``; its preprocessor lines are read by preprocessor/directives.py),
the ``#ifndef`` guards that make its defines tunable (``guard``, the
``ksweep guard`` command), the check that guarding left the generated code alone
(``codecheck``, on the code of ``elf/``), and a starting spec written from its guarded defines and
``#ifdef`` switches (``starter``, the ``ksweep init`` command)."""
