"""El ejemplo de la página de inicio (docs/index.md incluye la sección `generador` tal cual):
un generador asíncrono entrega valores uno a uno, y `async for` los recibe."""

import asyncio


def test_async_for_recibe_lo_que_entrega_un_generador_asincrono_y_break_lo_deja(capsys):
    async def correr():
        # --8<-- [start:generador]
        async def fases():  # async def con yield: un generador asíncrono
            yield "intentado"
            await asyncio.sleep(0)  # aquí podría esperar a un modelo o a un fichero
            yield "completado"

        async for fase in fases():  # en una celda de Jupyter, tal cual: sin asyncio.run
            print(fase)
            break  # dejar de iterar: «completado» no llega a entregarse
        # --8<-- [end:generador]

    asyncio.run(correr())

    assert capsys.readouterr().out == "intentado\n"
