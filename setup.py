"""The optional C extension; everything else is in pyproject.toml.

``connectrt._speedups`` builds a sink batch's records from its columns in one C call
(see connectrt/_speedups.c). ``optional=True``: where no C compiler or Python headers are
present the install goes on without it and connectrt uses its pure-Python loop instead.
An editable install (``make setup``) builds it next to its source; after changing the C file,
``python setup.py build_ext --inplace`` rebuilds it there.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "connectrt._speedups",
            sources=["connectrt/_speedups.c"],
            optional=True,
        )
    ]
)
