"""Doctest collection (``--doctest-modules``): an integration whose library is not installed is skipped
(importing it is what needs the library: ``depthcert.integrations.lightning`` / ``.transformers``)."""
import importlib.util

collect_ignore = [f"depthcert/integrations/{name}.py" for name, lib in (("lightning", "lightning"), ("transformers", "transformers"))
                  if importlib.util.find_spec(lib) is None]
