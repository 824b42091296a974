"""Facts several investigators need (GPU inventory, platform), collected once per audit."""
