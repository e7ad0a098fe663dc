"""Interoperability with other toolkits: GroMo (:mod:`numerics.interop.gromo`) and local Hugging Face models (:mod:`numerics.interop.hf`)."""
